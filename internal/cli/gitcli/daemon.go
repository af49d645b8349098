package gitcli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/bl-backlog/bl/internal/cli"
)

// maxRequest bounds one relayed command line with its environment.
const maxRequest = cli.MaxDaemonRequest

// serveDaemon is bl daemon: each connection on sock brings one command
// line, run through s; the reply goes back on it. When ctx ends it stops
// listening and lets the calls under way finish.
func serveDaemon(ctx context.Context, s *cli.Session, sock string, ready func()) error {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	// On its end the daemon removes the socket only if it is still its
	// own: another daemon may have made one in its place since (git clean
	// -x removes the ignored cache).
	ln.SetUnlinkOnClose(false)
	if mine, err := os.Lstat(sock); err == nil {
		defer func() {
			if cur, err := os.Lstat(sock); err == nil && os.SameFile(mine, cur) {
				_ = os.Remove(sock)
			}
		}()
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return err
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	ready()
	var calls sync.WaitGroup
	defer calls.Wait()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		calls.Add(1)
		go func() {
			defer calls.Done()
			defer c.Close()
			if !sameUser(c) {
				return
			}
			r := bufio.NewReader(&limited{c, maxRequest})
			// A connection that has not sent its command line when
			// the daemon ends is no call under way.
			stopRead := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Now()) })
			line, err := r.ReadBytes('\n')
			stopRead()
			if errors.Is(err, errTooLarge) {
				// Read no further; the caller learns why and bl-git
				// takes the command.
				_, _ = c.Write(cli.DaemonRefusal(fmt.Sprintf("a request is at most %d bytes", maxRequest)))
				return
			}
			if err != nil {
				return
			}
			_, _ = c.Write(s.Relay(ctx, line))
		}()
	}
}

// limited reads at most n bytes, then errTooLarge: one connection holds
// no more than that in memory.
type limited struct {
	c *net.UnixConn
	n int
}

var errTooLarge = errors.New("request too large")

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLarge
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	n, err := l.c.Read(p)
	l.n -= n
	return n, err
}
