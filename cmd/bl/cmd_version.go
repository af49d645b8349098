package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/bl-backlog/bl/ledger"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

// VersionCmd prints the version.
type VersionCmd struct{}

func (VersionCmd) Help() string {
	return `Examples:

    bl version
    bl version --json` + exitCodesHelp
}

func (c *VersionCmd) Run(a *App) error {
	v := version
	if info, ok := debug.ReadBuildInfo(); ok && v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	out := struct {
		Version       string `json:"version"`
		Go            string `json:"go"`
		FormatVersion int    `json:"ledger_format"`
	}{v, runtime.Version(), ledger.FormatVersion}
	return a.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "bl %s (%s, ledger format v%d)\n", out.Version, out.Go, out.FormatVersion)
	})
}
