// Command bl-git is bl with git built in: the same command line, plus the
// git side that bl hands over to it (bl sync, the ledger merge driver, bl
// init's merge driver setup, claims through a remote, sync.auto) and the
// commands that need a heavy library (bl serve, bl mcp, bl board, webhook
// delivery). Install it next to bl; bl starts it by itself when a command
// needs it.
package main

import (
	"os"

	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/internal/cli/gitcli"
)

func main() {
	os.Exit(cli.Main(gitcli.Extensions(), os.Args[1:], os.Stdout, os.Stderr))
}
