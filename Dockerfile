# syntax=docker/dockerfile:1
# A small static ax image: the binary on distroless/static (CA
# certificates, tzdata, /etc/passwd with nonroot, no shell).
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t ax .
#   docker run -d --name ax1 -p 7070:7070 -p 7071:7071 -v ax1:/data ax \
#     agent -node n1 -data /data -http 0.0.0.0:7070 -raft 0.0.0.0:7071 \
#     -advertise-http 10.0.0.1:7070 -advertise-raft 10.0.0.1:7071 \
#     -tls-ca /tls/ax-ca.pem -tls-cert /tls/n1.pem -tls-key /tls/n1-key.pem
#
# The default CMD listens on every interface, so an agent started with it
# alone refuses to start until it is told -advertise-http and
# -advertise-raft (the addresses the other nodes reach it at) and given
# TLS (or -insecure): arguments after the image name replace the CMD.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH
# The same build line as scripts/dist.sh (make dist); deploy/deploy_test.go checks it.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o /out/ax ./cmd/ax
# /data owned by the image's user, so a new volume is writable.
RUN mkdir -p /out/data && chown 65532:65532 /out/data && chmod 0700 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ax /usr/local/bin/ax
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME /data
# 7070: HTTP API and console; 7071: Raft.
EXPOSE 7070 7071
ENTRYPOINT ["ax"]
CMD ["agent", "-node", "n1", "-data", "/data", "-http", "0.0.0.0:7070", "-raft", "0.0.0.0:7071"]
