package ledger

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// TestIDsDifferInCopiesOfOneProcess: a running bl copied whole — a VM or
// container restored twice from one snapshot, a checkpoint restored twice
// — is two clones, and their ids must not repeat each other. An id drawn
// from a generator in the process's memory (math/rand/v2: the runtime's
// ChaCha8 state) would: both copies carry on from one state. The kernel's
// generator, which crypto/rand reads, gives each copy its own (it wipes
// the vDSO state of a fork, and reseeds when a VM is restored). fork(2)
// stands in for the snapshot: it copies the process, the generator's
// state with it.
func TestIDsDifferInCopiesOfOneProcess(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // the copy must not collect
	runtime.LockOSThread()                           // the copy goes on from this thread's state
	defer runtime.UnlockOSThread()
	for name, id := range map[string]func() string{"event": wire.NewEventID, "card": NewCardID} {
		var child, parent string
		for try := 0; ; try++ {
			id() // first use done before the copy: the copy only draws
			var ok bool
			if child, parent, ok = idsOfCopies(t, id); ok {
				break
			}
			if try == 4 {
				t.Skip("the forked copy never answered (each stopped on a lock another thread held at the fork)")
			}
		}
		if child == parent {
			t.Errorf("two copies of one process drew the same %s id %s: ids come from state in the process's memory, so clones restored from one snapshot collide", name, child)
		}
	}
}

// idsOfCopies forks, draws an id in both processes, and returns the
// child's and the parent's. The child makes only raw system calls besides
// id. ok is false when the child did not answer (it stopped on a lock some
// other thread held at the fork); it is killed.
func idsOfCopies(t *testing.T, id func() string) (child, parent string, ok bool) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 {
		t.Fatalf("fork: %v", errno)
	}
	if pid == 0 {
		s := id()
		syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fds[1]), uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(len(s)))
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
	}
	parent = id()
	syscall.Close(fds[1])
	_ = syscall.SetNonblock(fds[0], true) // before NewFile: the poller then takes it, and the deadline holds
	r := os.NewFile(uintptr(fds[0]), "pipe")
	defer r.Close()
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second)) // a hang guard, not a budget: the copy is tried again
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if err != nil {
		syscall.Kill(int(pid), syscall.SIGKILL)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(int(pid), &ws, 0, nil)
	if err != nil {
		return "", "", false
	}
	return string(buf[:n]), parent, true
}

// TestIDsDifferAcrossProcessesWhateverGODEBUG: processes started at once
// draw different ids, also with the GODEBUG settings that make math/rand
// repeat itself (randautoseed=0 seeds it with 1).
func TestIDsDifferAcrossProcessesWhateverGODEBUG(t *testing.T) {
	if os.Getenv("BL_TEST_DRAW_IDS") == "1" {
		os.Stdout.WriteString(wire.NewEventID() + " " + NewCardID() + "\n")
		return
	}
	const n = 8
	outs := make(chan []byte, n)
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIDsDifferAcrossProcessesWhateverGODEBUG$", "-test.count=1")
		cmd.Env = append(os.Environ(), "BL_TEST_DRAW_IDS=1", "GODEBUG=randautoseed=0,randseednop=0")
		go func() {
			out, err := cmd.Output()
			if err != nil {
				t.Error(err)
			}
			outs <- out
		}()
	}
	seen := map[string]bool{}
	for range n {
		line, _, _ := strings.Cut(string(<-outs), "\n")
		for _, id := range strings.Fields(line) {
			if seen[id] {
				t.Errorf("two processes drew the id %s", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != 2*n {
		t.Errorf("%d ids from %d processes, want %d", len(seen), n, 2*n)
	}
}
