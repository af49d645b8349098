package cli

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/alecthomas/kong"
)

// printHelp prints bl --help as kong does, and a command's help with its
// own flags first and the global flags and exit codes once, compactly, at
// the end. Flags without a placeholder have one by type (newParser).
func printHelp(options kong.HelpOptions, ctx *kong.Context) error {
	if ctx.Selected() == nil {
		return kong.DefaultHelpPrinter(options, ctx)
	}
	var globals []string
	for _, f := range ctx.Model.Node.Flags {
		if f.Hidden || f.Name == "help" {
			continue
		}
		g := "--" + f.Name
		if !f.IsBool() {
			g += "=" + f.FormatPlaceHolder()
		}
		globals = append(globals, g)
		f.Hidden = true // shown once below
		defer func() { f.Hidden = false }()
	}
	if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
		return err
	}
	fmt.Fprintf(ctx.Stdout, "\nGlobal flags: %s (see bl --help).\n%s\n", strings.Join(globals, " "), strings.TrimSpace(exitCodesLine))
	return nil
}

// placeholders gives every flag without a placeholder one named for its
// type, so values read the same everywhere (--epoch=N, --ttl=DURATION,
// --owner=TEXT).
func placeholders(n *kong.Node) {
	for _, f := range n.Flags {
		if f.PlaceHolder != "" || f.IsBool() {
			continue
		}
		t := f.Target.Type()
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		switch {
		case t == reflect.TypeOf(time.Duration(0)):
			f.PlaceHolder = "DURATION"
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
			f.PlaceHolder = "N"
		default:
			f.PlaceHolder = "TEXT"
		}
	}
	for _, c := range n.Children {
		placeholders(c)
	}
}
