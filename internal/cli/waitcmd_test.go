package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// waitEnd is when waitfile and waitgone give up: a tenth short of the test
// binary's deadline (go test -timeout), so a wait on something that never
// happens fails the script with its own message instead of the whole run
// with a timeout panic. It has no budget of its own: a slow machine only
// makes a script run longer.
var waitEnd = time.Now().Add(time.Hour)

func setWaitEnd(t interface{ Deadline() (time.Time, bool) }) {
	if end, ok := t.Deadline(); ok {
		waitEnd = time.Now().Add(time.Until(end) * 9 / 10)
	}
}

// waitFor polls done until it holds or waitEnd passes.
func waitFor(ts *testscript.TestScript, what string, done func() bool) {
	for !done() {
		if time.Now().After(waitEnd) {
			ts.Fatalf("gave up near the test deadline waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdWaitFile waits until each FILE exists and is not empty.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: waitfile FILE...")
	}
	for _, a := range args {
		path := ts.MkAbs(a)
		waitFor(ts, a, func() bool {
			fi, err := os.Stat(path)
			return err == nil && fi.Size() > 0
		})
	}
}

// cmdWaitGone waits until the process whose pid each PIDFILE holds has
// exited: gone, or a zombie waiting to be reaped.
func cmdWaitGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: waitgone PIDFILE...")
	}
	if runtime.GOOS != "linux" {
		ts.Fatalf("waitgone reads /proc: Linux only")
	}
	for _, a := range args {
		pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(a)))
		if err != nil {
			ts.Fatalf("waitgone: %s: %v", a, err)
		}
		waitFor(ts, fmt.Sprintf("process %d (%s) to exit", pid, a), func() bool {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				return true
			}
			// pid (comm) state ...; comm may hold spaces.
			i := bytes.LastIndexByte(b, ')')
			return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
		})
	}
}

// cmdWaitQueued waits until a process is queued for the flock on FILE
// (a "->" line for its inode in /proc/locks): a background command has
// started and is waiting for the lock, so its signal handling is set up.
// Where there is no /proc/locks it sleeps a second instead.
func cmdWaitQueued(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitqueued FILE")
	}
	id, ok := procLocksID(ts, ts.MkAbs(args[0]))
	if !ok {
		time.Sleep(time.Second)
		return
	}
	waitFor(ts, "a process queued for the lock on "+args[0], func() bool {
		b, err := os.ReadFile("/proc/locks")
		ts.Check(err)
		for l := range strings.Lines(string(b)) {
			f := strings.Fields(l)
			if len(f) > 6 && f[1] == "->" && f[6] == id {
				return true
			}
		}
		return false
	})
}

// cmdWaitWatching waits until a process whose working directory is the
// script's watches files through inotify (an "inotify wd:" line in one of
// its /proc/PID/fdinfo files): a bl claim --wait or watch started in the
// background is waiting for changes, so its signal handling is set up.
// Where there is no /proc it sleeps a second instead.
func cmdWaitWatching(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: waitwatching")
	}
	if _, err := os.Stat("/proc/self/fdinfo"); err != nil {
		time.Sleep(time.Second)
		return
	}
	dir, err := filepath.EvalSymlinks(ts.MkAbs("."))
	ts.Check(err)
	self := os.Getpid()
	waitFor(ts, "a process in "+dir+" to watch files", func() bool {
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			if pid, _ := strconv.Atoi(filepath.Base(p)); pid == self {
				continue
			}
			if cwd, err := os.Readlink(p + "/cwd"); err != nil || cwd != dir {
				continue
			}
			infos, _ := filepath.Glob(p + "/fdinfo/*")
			for _, fi := range infos {
				if b, err := os.ReadFile(fi); err == nil && bytes.Contains(b, []byte("inotify wd:")) {
					return true
				}
			}
		}
		return false
	})
}

// cmdWaitMatch waits until FILE holds a match for REGEXP: a line a
// background command wrote to a file it was redirected to.
func cmdWaitMatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitmatch REGEXP FILE")
	}
	re, err := regexp.Compile("(?m)" + args[0])
	ts.Check(err)
	path := ts.MkAbs(args[1])
	waitFor(ts, fmt.Sprintf("%q in %s", args[0], args[1]), func() bool {
		b, err := os.ReadFile(path)
		return err == nil && re.Match(b)
	})
}

// cmdWaitWchan waits until a thread of the process whose pid PIDFILE holds
// sleeps in the kernel function NAME (/proc/PID/task/*/wchan), e.g.
// wait_for_partner: opening a FIFO nobody writes. Where wchan cannot be
// read it sleeps a second instead.
func cmdWaitWchan(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitwchan PIDFILE NAME")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	if err != nil {
		ts.Fatalf("waitwchan: %s: %v", args[0], err)
	}
	if _, err := os.ReadFile("/proc/self/wchan"); err != nil {
		time.Sleep(time.Second)
		return
	}
	waitFor(ts, fmt.Sprintf("process %d to sleep in %s", pid, args[1]), func() bool {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
		for _, t := range tasks {
			if b, err := os.ReadFile(t); err == nil && strings.TrimSpace(string(b)) == args[1] {
				return true
			}
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			ts.Fatalf("process %d exited before it slept in %s", pid, args[1])
		}
		return false
	})
}
