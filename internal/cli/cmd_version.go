package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/bl-backlog/bl/ledger"
)

// version is set at build time with
// -ldflags "-X github.com/bl-backlog/bl/internal/cli.version=v1.2.3".
var version = "dev"

// VersionCmd prints the version.
type VersionCmd struct{}

func (VersionCmd) Help() string {
	return `Prints which binary runs: bl, or bl-git, the same command line with git
built in, which bl starts by itself for the commands that need git (bl
sync, bl init in a git repository, claims through a remote, sync.auto).

Examples:

    bl version
    bl version --json` + exitCodesHelp
}

// binaryVersion is this binary's version: the one stamped at build time,
// else the module's.
func binaryVersion() string {
	v := version
	if info, ok := debug.ReadBuildInfo(); ok && v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	return v
}

func (c *VersionCmd) Run(a *App) error {
	v := binaryVersion()
	binary := "bl"
	if a.ext.Git != nil {
		binary = "bl-git"
	}
	out := struct {
		Binary        string `json:"binary"`
		Version       string `json:"version"`
		Go            string `json:"go"`
		FormatVersion int    `json:"ledger_format"`
	}{binary, v, runtime.Version(), ledger.FormatVersion}
	return a.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "%s %s (%s, ledger format v%d)\n", out.Binary, out.Version, out.Go, out.FormatVersion)
	})
}
