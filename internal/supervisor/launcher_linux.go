package supervisor

import (
	"errors"
	"fmt"
	json "github.com/goccy/go-json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The launcher keeps a command from outliving its supervisor. bl run
// starts it once, as a second bl process (the same binary, marked by
// LauncherEnv), and asks it over a socket to start each card's command.
// It is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the command
// starts stays below it, whether it calls setsid, double-forks or is
// orphaned, so it can find all of it in /proc. It kills all of it
//
//   - when the command exits (what it left running),
//   - when the supervisor's end of the socket closes: bl run ended, or
//     was killed, even by SIGKILL (the kernel closes its files).
//
// The supervisor is a subreaper too: if the launcher itself is killed, the
// command (its Pdeathsig) dies and what the command started falls to the
// supervisor, which kills it. Only SIGKILL of both at once lets a process
// escape. The supervisor signals the command's process group itself
// (SIGTERM, SIGKILL, a passed-on SIGINT), by number.
//
// The protocol is one SOCK_SEQPACKET message per step. "start" carries
// files (SCM_RIGHTS): a pipe holding the request as JSON (name, args, env,
// dir), then the command's standard input, output and error, then the
// files it inherits. The launcher answers {pid} or {error}, and later
// {status}, once the command and all it left are gone.

// LauncherEnv marks a bl process started as bl run's launcher; its value
// is the socket's file descriptor.
const LauncherEnv = "BL_RUN_LAUNCHER"

type startMsg struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
}

type replyMsg struct {
	Pid    int    `json:"pid,omitempty"`
	Error  string `json:"error,omitempty"`
	Status *int   `json:"status,omitempty"` // the raw wait status
}

// setSubreaper makes this process the reaper of its orphaned descendants.
func setSubreaper() error {
	return prctl(prSetChildSubreaper, 1)
}

const prSetChildSubreaper = 36 // linux/prctl.h

func prctl(option, arg int) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, uintptr(option), uintptr(arg), 0); e != 0 {
		return e
	}
	return nil
}

// launcher is the supervisor's handle on its launcher process.
type launcher struct {
	cmd     *exec.Cmd
	fd      int // our end of the socket
	replies chan replyMsg
	exited  chan struct{} // closed once the launcher is gone and reaped
}

// containSupported: the launcher and subreapers exist here.
const containSupported = true

// newLauncher makes this process a subreaper and starts the launcher.
func newLauncher() (*launcher, error) {
	if err := setSubreaper(); err != nil {
		return nil, fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, err
	}
	theirs := os.NewFile(uintptr(fds[1]), "bl-run-launcher")
	defer theirs.Close()
	// The argument is for ps only: LauncherEnv makes it the launcher.
	cmd := &exec.Cmd{Path: exe, Args: []string{os.Args[0], "bl-run-launcher"}, Env: append(os.Environ(), LauncherEnv+"=3"),
		ExtraFiles: []*os.File{theirs}, Stderr: os.Stderr,
		// Its own process group: a terminal's Ctrl-C reaches bl run, which
		// passes it on, not the launcher.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		syscall.Close(fds[0])
		return nil, fmt.Errorf("start bl run's launcher: %w", err)
	}
	l := &launcher{cmd: cmd, fd: fds[0], replies: make(chan replyMsg), exited: make(chan struct{})}
	go l.read()
	return l, nil
}

// read passes the launcher's replies on; the channel closes when the
// launcher is gone.
func (l *launcher) read() {
	defer func() {
		_ = l.cmd.Wait()
		close(l.exited)
		close(l.replies)
	}()
	buf := make([]byte, 4096)
	for {
		n, _, _, _, err := syscall.Recvmsg(l.fd, buf, nil, 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		var m replyMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			return
		}
		l.replies <- m
	}
}

// close ends the launcher: it kills what is left and exits. Shutdown,
// not close, wakes our reader and tells the launcher.
func (l *launcher) close() {
	_ = syscall.Shutdown(l.fd, syscall.SHUT_RDWR)
	<-l.exited
	syscall.Close(l.fd)
}

// start has the launcher start sp. Files that are not *os.File (a tail,
// a buffer) go through pipes copied here.
func (l *launcher) start(sp spec) (*proc, error) {
	var files, ours []*os.File // ours: our ends, closed once sent
	var copies sync.WaitGroup
	var readers []*os.File
	defer func() {
		for _, f := range ours {
			f.Close()
		}
	}()
	// stdin
	switch in := sp.stdin.(type) {
	case *os.File:
		files = append(files, in)
	case nil:
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		files, ours = append(files, f), append(ours, f)
	default:
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		files, ours = append(files, r), append(ours, r)
		go func() { _, _ = io.Copy(w, in); w.Close() }()
	}
	for _, out := range []io.Writer{sp.stdout, sp.stderr} {
		if f, ok := out.(*os.File); ok {
			files = append(files, f)
			continue
		}
		if out == nil {
			out = io.Discard
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		files, ours, readers = append(files, w), append(ours, w), append(readers, r)
		copies.Add(1)
		go func() { defer copies.Done(); _, _ = io.Copy(out, r) }()
	}
	files = append(files, sp.inherit...)
	// The request goes through a pipe of its own, the first file sent:
	// arguments and environment may hold megabytes, more than one
	// socket message carries.
	payload, _ := json.Marshal(startMsg{Name: sp.name, Args: sp.args, Env: sp.env, Dir: sp.dir})
	pr, pw, err := os.Pipe()
	if err != nil {
		closeAll(readers)
		return nil, err
	}
	ours = append(ours, pr)
	go func() { _, _ = pw.Write(payload); pw.Close() }()
	files = append([]*os.File{pr}, files...)
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	if err := syscall.Sendmsg(l.fd, []byte("start"), syscall.UnixRights(fds...), nil, 0); err != nil {
		pr.Close() // ends the writer
		closeAll(readers)
		return nil, fmt.Errorf("bl run's launcher: %w", err)
	}
	m, ok := <-l.replies
	switch {
	case !ok:
		closeAll(readers)
		return nil, errors.New("bl run's launcher is gone")
	case m.Error != "":
		closeAll(readers)
		return nil, errors.New(m.Error)
	}
	p := &proc{pid: m.Pid, done: make(chan exitInfo, 1)}
	go func() {
		var info exitInfo
		if m, ok := <-l.replies; ok && m.Status != nil {
			info = statusInfo(syscall.WaitStatus(*m.Status))
		} else {
			// The launcher was killed: the command died with it
			// (Pdeathsig), and what it started is ours now.
			killDescendants()
			info = exitInfo{128 + int(syscall.SIGKILL), "signal: killed (with bl run's launcher)"}
		}
		// Like exec.Cmd's WaitDelay: output held open by something that
		// escaped must not keep the supervisor waiting.
		copied := make(chan struct{})
		go func() { copies.Wait(); close(copied) }()
		select {
		case <-copied:
		case <-time.After(time.Second):
			closeAll(readers)
			<-copied
		}
		closeAll(readers)
		p.done <- info
	}()
	return p, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// statusInfo is how a command with wait status ws ended, in the words of
// os.ProcessState.
func statusInfo(ws syscall.WaitStatus) exitInfo {
	switch {
	case ws.Exited():
		return exitInfo{ws.ExitStatus(), "exit status " + strconv.Itoa(ws.ExitStatus())}
	case ws.Signaled():
		how := "signal: " + ws.Signal().String()
		if ws.CoreDump() {
			how += " (core dumped)"
		}
		return exitInfo{128 + int(ws.Signal()), how}
	}
	return exitInfo{1, fmt.Sprintf("wait status %#x", int(ws))}
}

// IsLauncher reports whether this process was started as bl run's
// launcher (see RunLauncher).
func IsLauncher() bool { return os.Getenv(LauncherEnv) != "" }

// RunLauncher is the launcher's main: it starts the commands the
// supervisor asks for, one at a time, and kills everything below it when
// each ends and when the supervisor goes. It returns the exit code.
func RunLauncher() int {
	fd, err := strconv.Atoi(os.Getenv(LauncherEnv))
	os.Unsetenv(LauncherEnv)
	if err != nil || fd < 3 {
		fmt.Fprintln(os.Stderr, "bl: "+LauncherEnv+" is for bl run only")
		return 2
	}
	syscall.CloseOnExec(fd)
	if err := setSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "bl run's launcher: PR_SET_CHILD_SUBREAPER:", err)
		return 1
	}
	type request struct {
		m     startMsg
		files []*os.File
	}
	reqs := make(chan request)
	go func() {
		defer close(reqs)
		buf, oob := make([]byte, 64), make([]byte, syscall.CmsgSpace(64*4))
		for {
			n, oobn, _, _, err := syscall.Recvmsg(fd, buf, oob, syscall.MSG_CMSG_CLOEXEC)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				return
			}
			var r request
			if cms, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, cm := range cms {
					if fds, err := syscall.ParseUnixRights(&cm); err == nil {
						for _, f := range fds {
							r.files = append(r.files, os.NewFile(uintptr(f), "fd"+strconv.Itoa(f)))
						}
					}
				}
			}
			if string(buf[:n]) != "start" || len(r.files) < 4 {
				closeAll(r.files)
				return
			}
			payload, err := io.ReadAll(r.files[0])
			r.files[0].Close()
			r.files = r.files[1:]
			if err != nil || json.Unmarshal(payload, &r.m) != nil {
				closeAll(r.files)
				return
			}
			reqs <- r
		}
	}()
	reply := func(m replyMsg) {
		b, _ := json.Marshal(m)
		_ = syscall.Sendmsg(fd, b, nil, nil, 0)
	}
	for r := range reqs {
		cmd := exec.Command(r.m.Name, r.m.Args...)
		cmd.Env, cmd.Dir = r.m.Env, r.m.Dir
		cmd.Stdin, cmd.Stdout, cmd.Stderr = r.files[0], r.files[1], r.files[2]
		cmd.ExtraFiles = r.files[3:]
		// Its own group, for the supervisor's signals; and if this
		// launcher is killed, the command dies too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		err := cmd.Start()
		closeAll(r.files) // the command has them; ours would hold pipes and the lock open
		if err != nil {
			reply(replyMsg{Error: err.Error()})
			continue
		}
		reply(replyMsg{Pid: cmd.Process.Pid})
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
	wait:
		for {
			select {
			case <-exited:
				break wait
			case r, ok := <-reqs:
				if !ok { // the supervisor is gone
					killDescendants()
					return 0
				}
				closeAll(r.files)
				reply(replyMsg{Error: "a command is running already"})
			}
		}
		killDescendants()
		st := int(cmd.ProcessState.Sys().(syscall.WaitStatus))
		reply(replyMsg{Status: &st})
	}
	killDescendants()
	return 0
}

// killDescendants kills every process below this one and reaps them. This
// process must be a subreaper, so that nothing below it can leave: a
// process whose parent dies is reparented to it. Round after round, it
// kills all it finds in /proc and reaps its children, until it has none.
func killDescendants() {
	self := os.Getpid()
	for range 10000 {
		// Reap what has exited; none at all (ECHILD) means nothing is
		// left below: the quick answer when the command left nothing.
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return
			}
			if pid <= 0 {
				break
			}
		}
		kids := descendants(self)
		for _, p := range kids {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		for _, p := range kids {
			if p.ppid == self {
				_, _ = syscall.Wait4(p.pid, nil, 0, nil)
			}
		}
		if len(kids) == 0 {
			// Children that /proc did not show yet (just forked).
			time.Sleep(time.Millisecond)
		}
	}
}

type procEntry struct{ pid, ppid int }

// descendants lists the processes below root, from /proc.
func descendants(root int) []procEntry {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	var out []procEntry
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, procEntry{c, p})
			queue = append(queue, c)
		}
	}
	return out
}
