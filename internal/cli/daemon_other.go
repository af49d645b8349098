//go:build !unix

package cli

import "os"

// Without unix sockets there is no daemon: bl-git takes every command.
func trustedDaemonDir(string) error { return errNoDaemon }

func dialDaemon(string) (*os.File, int, error) { return nil, 0, errNoDaemon }

func daemonStopped(int) bool { return false }

func makeDaemonDir(string) error { return errNoDaemon }
