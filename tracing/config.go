package tracing

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Enabled says whether the OTEL_* variables (read by getenv) turn
// tracing on, and why not when they do not: OTEL_SDK_DISABLED=true turns
// it off; else OTEL_TRACES_EXPORTER decides when set ("otlp" on, "none"
// off, anything else an error); else an OTLP endpoint variable
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// turns it on. Nothing set: off.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch ex := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); ex {
	case "otlp":
		return true, protocol(getenv)
	case "none":
		return false, nil
	case "":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: ax exports traces over OTLP only (otlp or none)", ex)
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false, nil
	}
	return true, protocol(getenv)
}

// protocol refuses an OTLP protocol other than http/protobuf.
func protocol(getenv func(string) string) error {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(k)); p != "" {
			if p != "http/protobuf" {
				return fmt.Errorf("%s=%s: ax exports traces over OTLP/HTTP (http/protobuf) only", k, p)
			}
			return nil
		}
	}
	return nil
}

// sampler decides whether an instance's trace is sampled, on its trace
// id alone, so every node decides alike: always, never, or (ratio) when
// the id's last 8 bytes, shifted right by one, are below bound, as the
// SDK's TraceIDRatioBased decides.
type sampler struct {
	all   bool // always_on, or a ratio of 1 or more
	bound uint64
}

func (s sampler) sample(tid trace.TraceID) bool {
	return s.all || binary.BigEndian.Uint64(tid[8:16])>>1 < s.bound
}

// parseSampler is the root sampler OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG name (default parentbased_always_on). An
// instance's trace has no parent (a caller's trace is a link), so the
// parentbased_ samplers decide as their root sampler does.
func parseSampler(getenv func(string) string) (sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	switch strings.TrimPrefix(name, "parentbased_") {
	case "", "always_on":
		return sampler{all: true}, nil
	case "always_off":
		return sampler{}, nil
	case "traceidratio":
		if arg == "" {
			return sampler{all: true}, nil
		}
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || v < 0 || v > 1 {
			return sampler{}, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%s: want a ratio from 0 to 1", arg)
		}
		if v >= 1 {
			return sampler{all: true}, nil
		}
		return sampler{bound: uint64(v * (1 << 63))}, nil
	}
	return sampler{}, fmt.Errorf("OTEL_TRACES_SAMPLER=%s: want always_on, always_off, traceidratio or their parentbased_ forms", name)
}
