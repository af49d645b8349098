// Command bl-git is bl with git built in: the same command line, plus the
// git side that bl hands over to it (bl sync, the ledger merge driver, bl
// init's merge driver setup, claims through a remote, sync.auto). Install
// it next to bl; bl starts it by itself when a command needs git.
package main

import (
	"os"

	"github.com/bl-backlog/bl/internal/cli/gitcli"
)

func main() {
	os.Exit(gitcli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
