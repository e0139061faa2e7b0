package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/ax-scheduler/ax/tlsutil"
)

type tlsCommand struct{}

func (*tlsCommand) Usage() string {
	return `
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
}

func (c *tlsCommand) Run(ctx context.Context, args []string) error {
	switch {
	case len(args) >= 2 && args[0] == "ca" && args[1] == "create":
		return c.caCreate(args[2:])
	case len(args) >= 2 && args[0] == "cert" && args[1] == "create":
		return c.certCreate(args[2:])
	default:
		fmt.Fprint(os.Stderr, strings.TrimLeft(c.Usage(), "\n"))
		return fmt.Errorf("tls: want ca create or cert create")
	}
}

func (c *tlsCommand) caCreate(args []string) error {
	fs := newFlagSet("tls ca create", c.Usage())
	dir := fs.String("dir", ".", "directory to write the CA to")
	days := fs.Int("days", tlsutil.DefaultCADays, "validity in days")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("tls ca create: unexpected arguments %q", fs.Args())
	}
	cert, key, err := tlsutil.CreateCA(*dir, *days)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s\nwrote %s (the CA's private key: keep it secret, off the nodes)\n", cert, key)
	return nil
}

func (c *tlsCommand) certCreate(args []string) error {
	fs := newFlagSet("tls cert create", c.Usage())
	dir := fs.String("dir", ".", "directory holding the CA, where the certificate is written")
	node := fs.String("node", "", "make a node certificate for this node id")
	clientName := fs.String("client", "", "make a client certificate with this name")
	days := fs.Int("days", tlsutil.DefaultCertDays, "validity in days")
	var ips, dns listFlag
	fs.Var(&ips, "ip", "extra IP address the node certificate names (repeatable, or comma-separated)")
	fs.Var(&dns, "dns", "extra DNS name the node certificate names (repeatable, or comma-separated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("tls cert create: unexpected arguments %q", fs.Args())
	}
	var cert, key string
	var err error
	switch {
	case (*node == "") == (*clientName == ""):
		return fmt.Errorf("tls cert create: give exactly one of -node NAME or -client NAME")
	case *node != "":
		var addrs []net.IP
		for _, s := range ips {
			ip := net.ParseIP(s)
			if ip == nil {
				return fmt.Errorf("tls cert create: -ip %q is not an IP address", s)
			}
			addrs = append(addrs, ip)
		}
		cert, key, err = tlsutil.CreateNodeCert(*dir, *node, addrs, dns, *days)
	default:
		if len(ips) > 0 || len(dns) > 0 {
			return fmt.Errorf("tls cert create: -ip and -dns are for node certificates")
		}
		cert, key, err = tlsutil.CreateClientCert(*dir, *clientName, *days)
	}
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s\nwrote %s\n", cert, key)
	return nil
}

// listFlag collects a repeatable, comma-separable flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}
