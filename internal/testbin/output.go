package testbin

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Output is what a process writes (its cmd.Stdout or cmd.Stderr) while
// the test reads it.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Since is what was written after the first n bytes, once it holds want.
// A process that wrote a line before it answered may still have it in
// flight: the copy from its pipe into o runs on its own. Since waits for
// it as long as the test may run, and fails the test when it never comes.
func (o *Output) Since(t testing.TB, n int, want string) string {
	t.Helper()
	for {
		s := o.String()[n:]
		if strings.Contains(s, want) {
			return s
		}
		if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
			if end, set := d.Deadline(); set && time.Until(end) < 5*time.Second {
				t.Fatalf("never written: %q; written: %q", want, s)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}
