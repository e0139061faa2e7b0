package operate

import (
	"context"
	"fmt"
	"net"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/tlsutil"
)

// TlsUsage is the help of ax tls and of its subcommands.
const TlsUsage = `
Usage:
	ax tls ca create -dir D [-days N]
	ax tls cert create -dir D -node NAME [-ip IP]... [-dns NAME]... [-days N]
	ax tls cert create -dir D -client NAME [-days N]

Makes the certificates of a TLS cluster, like consul tls / nomad tls:

ca create      the cluster CA: D/ax-ca.pem and D/ax-ca-key.pem (valid 5 years).
cert create -node NAME
               a node certificate, D/NAME.pem and D/NAME-key.pem, signed by
               the CA in D, for server and peer authentication. It names
               server.ax (the cluster server role: Raft accepts no other
               peer), NAME.server.ax, localhost and 127.0.0.1, plus every
               -ip and -dns: the addresses clients and executors use.
cert create -client NAME
               a client certificate (CN NAME, client.ax) for the CLI,
               executors or SDK programs (-client-cert, -client-key). It
               cannot join Raft.

Keys are written 0600 and no file is ever overwritten. Give each node its
own certificate and the CA certificate; keep ax-ca-key.pem off the nodes.

Examples:
	ax tls ca create -dir ./tls
	ax tls cert create -dir ./tls -node n1 -ip 10.0.0.1 -dns ax1.example.com
	ax tls cert create -dir ./tls -client alice
	ax agent -node n1 -http 10.0.0.1:7070 -raft 10.0.0.1:7071 \
		-tls-ca tls/ax-ca.pem -tls-cert tls/n1.pem -tls-key tls/n1-key.pem
	ax task list -addr 10.0.0.1:7070 -ca-cert tls/ax-ca.pem
`

// tlsCACreateCmd is ax tls ca create.
type tlsCACreateCmd struct {
	command.Base
	dir  string
	days int
}

// NewTLSCACreate makes ax tls ca create.
func NewTLSCACreate(io *command.IO) command.Command {
	c := &tlsCACreateCmd{}
	c.Init(io, "tls ca create", TlsUsage)
	c.FS.StringVar(&c.dir, "dir", ".", "directory to write the CA to")
	c.FS.IntVar(&c.days, "days", tlsutil.DefaultCADays, "validity in days")
	return c
}

func (c *tlsCACreateCmd) Run(ctx context.Context, args []string) error {
	if err := c.FS.Parse(args); err != nil {
		return err
	}
	if c.FS.NArg() > 0 {
		return fmt.Errorf("tls ca create: unexpected arguments %q", c.FS.Args())
	}
	cert, key, err := tlsutil.CreateCA(c.dir, c.days)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "wrote %s\nwrote %s (the CA's private key: keep it secret, off the nodes)\n", cert, key)
	return nil
}

// tlsCertCreateCmd is ax tls cert create.
type tlsCertCreateCmd struct {
	command.Base
	dir, node, client string
	days              int
	ips, dns          cli.ListFlag
}

// NewTLSCertCreate makes ax tls cert create.
func NewTLSCertCreate(io *command.IO) command.Command {
	c := &tlsCertCreateCmd{}
	c.Init(io, "tls cert create", TlsUsage)
	c.FS.StringVar(&c.dir, "dir", ".", "directory holding the CA, where the certificate is written")
	c.FS.StringVar(&c.node, "node", "", "make a node certificate for this node id")
	c.FS.StringVar(&c.client, "client", "", "make a client certificate with this name")
	c.FS.IntVar(&c.days, "days", tlsutil.DefaultCertDays, "validity in days")
	c.FS.Var(&c.ips, "ip", "extra IP address the node certificate names (repeatable, or comma-separated)")
	c.FS.Var(&c.dns, "dns", "extra DNS name the node certificate names (repeatable, or comma-separated)")
	return c
}

func (c *tlsCertCreateCmd) Run(ctx context.Context, args []string) error {
	if err := c.FS.Parse(args); err != nil {
		return err
	}
	if c.FS.NArg() > 0 {
		return fmt.Errorf("tls cert create: unexpected arguments %q", c.FS.Args())
	}
	var cert, key string
	var err error
	switch {
	case (c.node == "") == (c.client == ""):
		return fmt.Errorf("tls cert create: give exactly one of -node NAME or -client NAME")
	case c.node != "":
		var addrs []net.IP
		for _, s := range c.ips {
			ip := net.ParseIP(s)
			if ip == nil {
				return fmt.Errorf("tls cert create: -ip %q is not an IP address", s)
			}
			addrs = append(addrs, ip)
		}
		cert, key, err = tlsutil.CreateNodeCert(c.dir, c.node, addrs, c.dns, c.days)
	default:
		if len(c.ips) > 0 || len(c.dns) > 0 {
			return fmt.Errorf("tls cert create: -ip and -dns are for node certificates")
		}
		cert, key, err = tlsutil.CreateClientCert(c.dir, c.client, c.days)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "wrote %s\nwrote %s\n", cert, key)
	return nil
}
