// Command bl is a git-native, file-backed backlog for developers and fleets
// of coding agents sharing one repository.
//
// bl does not link git, so that every call starts fast; the commands that
// need git (bl sync, bl init in a git repository, claims through a remote,
// sync.auto) run in bl-git, which bl starts by itself.
package main

import (
	"os"

	"github.com/bl-backlog/bl/internal/cli"
)

func main() {
	os.Exit(cli.Main(cli.Extensions{}, os.Args[1:], os.Stdout, os.Stderr))
}
