// Package natstest starts NATS servers with JetStream for tests: embedded
// in the test process, on 127.0.0.1, file storage in a directory of the
// test's. Only tests import it.
package natstest

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is one embedded server.
type Server struct {
	*server.Server
	Opts *server.Options
}

// URL is the server's client URL.
func (s *Server) URL() string { return s.ClientURL() }

// Start starts a single server on a free port of 127.0.0.1, with its
// JetStream store under dir; it is shut down when the test ends.
func Start(t testing.TB, dir string) *Server {
	t.Helper()
	return StartWith(t, &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
}

// StartWith starts a server with opts.
func StartWith(t testing.TB, opts *server.Options) *Server {
	t.Helper()
	// A restart on the same port can find it still held for a moment on a
	// loaded machine: try again a few times.
	for try := 1; ; try++ {
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		if s.ReadyForConnections(20 * time.Second) {
			t.Cleanup(s.Shutdown)
			return &Server{s, opts}
		}
		s.Shutdown()
		if try == 3 {
			t.Fatal("nats server did not start")
		}
		time.Sleep(time.Second)
	}
}

// Restart starts a new server with the same options (the same port and
// store) after the old one was shut down.
func Restart(t testing.TB, old *Server) *Server {
	t.Helper()
	opts := *old.Opts
	opts.Port = old.Addr().(*net.TCPAddr).Port
	old.Shutdown()
	old.WaitForShutdown()
	return StartWith(t, &opts)
}

// Cluster starts n servers clustered on 127.0.0.1 with JetStream (for R3
// buckets), stores under dir/n<i>, and waits for a JetStream leader.
func Cluster(t testing.TB, dir string, n int) []*Server {
	t.Helper()
	ports := freePorts(t, 2*n)
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[n+i]))
	}
	out := make([]*Server, n)
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: ports[i], JetStream: true,
			StoreDir: filepath.Join(dir, fmt.Sprintf("n%d", i)), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "bl", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:  server.RoutesFromStr(joinComma(routes)),
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		out[i] = &Server{s, opts}
		t.Cleanup(s.Shutdown)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, s := range out {
		if !s.ReadyForConnections(time.Until(deadline)) {
			t.Fatal("cluster node did not start")
		}
	}
	for time.Now().Before(deadline) {
		for _, s := range out {
			if s.JetStreamIsLeader() {
				return out
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no JetStream leader in the cluster")
	return nil
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
