package supervisor

import (
	"io"
	"os"
	"os/exec"
	"time"
)

// spec is a command to start on a card.
type spec struct {
	name   string
	args   []string
	env    []string
	dir    string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// inherit are files the command and everything it starts inherit:
	// the worktree lock, held while any of them lives.
	inherit []*os.File
}

// exitInfo is how a command ended.
type exitInfo struct {
	code int    // its exit status, 128+n when signal n ended it
	how  string // "exit status 3", "signal: killed"
}

// proc is a started command.
type proc struct {
	pid  int           // its process group is the same number
	done chan exitInfo // one value, once it has exited and its output is copied
}

// startDirect starts the command as a child of this process, in a process
// group of its own. What it leaves in that group when it exits is killed;
// what it moved out of the group (setsid, double forks) is not: the
// launcher (Linux) covers those.
func startDirect(sp spec) (*proc, error) {
	cmd := exec.Command(sp.name, sp.args...)
	cmd.Env, cmd.Dir = sp.env, sp.dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sp.stdin, sp.stdout, sp.stderr
	cmd.ExtraFiles = sp.inherit
	// Output pipes held open by the command's own children must not keep
	// the supervisor waiting once the command has exited.
	cmd.WaitDelay = time.Second
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{pid: cmd.Process.Pid, done: make(chan exitInfo, 1)}
	go func() {
		err := cmd.Wait()
		killLeftovers(p.pid)
		p.done <- exitInfo{exitCode(cmd.ProcessState, err), describeExit(cmd.ProcessState, err)}
	}()
	return p, nil
}
