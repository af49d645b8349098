package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// TestAppStreams: a command reads its input from App.Stdin and its
// environment from App.Getenv, flags' variables (BL_DIR, BL_ACTOR)
// included, so it runs in this process with neither os.Stdin nor the
// process's environment involved.
func TestAppStreams(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".backlog")
	t.Setenv("BL_ACTOR", "process-actor") // Getenv, not this, is the command's
	t.Setenv("BL_DIR", "")
	t.Chdir(t.TempDir()) // a BL_DIR not read from Getenv must not reach this package's directory
	env := map[string]string{"BL_DIR": dir, "BL_ACTOR": "env-actor"}
	bl := func(stdin string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		a := &App{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
			Getenv: func(k string) string { return env[k] }, now: time.Now, args: args}
		code := runApp(a, args)
		if a.backlog != nil {
			a.backlog.Close()
		}
		if code != 0 {
			t.Fatalf("bl %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	bl("", "init")
	bl("the body, from stdin\n", "create", "--id", "A1", "--title", "one", "--body", "-")
	var card struct{ Body string }
	if err := json.Unmarshal([]byte(bl("", "show", "A1", "--json")), &card); err != nil {
		t.Fatal(err)
	}
	if card.Body != "the body, from stdin" {
		t.Errorf("body %q, want the text given on Stdin", card.Body)
	}
	var events []struct{ Op, Actor string }
	if err := json.Unmarshal([]byte(bl("", "log", "--json")), &events); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Op != "create" || events[0].Actor != "env-actor" {
		t.Errorf("events %+v, want one create by env-actor (BL_ACTOR from Getenv)", events)
	}
}
