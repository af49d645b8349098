package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

// Settings files as people write them: every one must take bl's entry,
// still parse with a real parser of its format with nothing else
// changed, and come back byte for byte after --remove.
var setupJSONFiles = []struct {
	name  string
	jsonc bool
	src   string
}{
	{"absent", false, ""},
	{"empty object", false, "{}\n"},
	{"one line", false, `{"permissions": {"allow": ["Bash(ls)"]}}`},
	{"four spaces", false, "{\n    \"mcpServers\": {\n        \"other\": {\n            \"command\": \"x\"\n        }\n    }\n}\n"},
	{"tabs", false, "{\n\t\"theme\": \"dark\",\n\t\"editor\": {}\n}\n"},
	{"crlf", false, "{\r\n  \"a\": 1,\r\n  \"mcpServers\": {\r\n    \"x\": {\"command\": \"y\"}\r\n  }\r\n}\r\n"},
	{"no final newline", false, "{\n  \"a\": [1, 2, 3]\n}"},
	{"unicode and escapes", false, "{\"name\": \"caf\\u00e9 \\\"q\\\"\", \"π\": 3.14, \"mcpServers\": {\"a\": {\"command\": \"/usr/bin/a b\"}}}\n"},
	{"gemini comments", true, "{\n  // theme\n  \"theme\": \"GitHub\", /* c */\n  \"mcpServers\": {\n    \"s\": {\"command\": \"s\"}, // trailing\n  },\n}\n"},
	{"gemini block comment first", true, "/* settings */\n{\n  \"mcpServers\": {\n    \"x\": {}\n  }\n}\n"},
	{"gemini comment with braces", true, "{\n  \"a\": \"// not a comment\", // a } comment {\n  \"b\": \"/* nor this */\",\n}\n"},
}

func TestSetupJSONRoundTrip(t *testing.T) {
	server := orderedObject{{"command", "bl"}, {"args", []any{"mcp", "--owner", "claude-x"}}}
	for _, f := range setupJSONFiles {
		t.Run(f.name, func(t *testing.T) {
			checkSetupJSON(t, []byte(f.src), f.jsonc, server)
		})
	}
}

// checkSetupJSON sets bl's server in src, checks the result with a real
// parser, removes it again and checks the bytes are src's.
func checkSetupJSON(t *testing.T, src []byte, jsonc bool, server any) {
	t.Helper()
	set := func(d *jsonDoc) error { return d.set([]string{"mcpServers"}, "bl", server) }
	added, err := editJSONFile(src, jsonc, set)
	if err != nil {
		t.Fatalf("set: %v", err)
	}
	before := realJSON(t, src, jsonc)
	after := realJSON(t, added, jsonc)
	servers, _ := after["mcpServers"].(map[string]any)
	if !reflect.DeepEqual(servers["bl"], normalJSON(server)) {
		t.Fatalf("mcpServers.bl = %v in\n%s", servers["bl"], added)
	}
	delete(servers, "bl")
	if len(servers) == 0 {
		if _, had := before["mcpServers"]; !had {
			delete(after, "mcpServers")
		}
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("other settings changed:\nbefore %v\nafter  %v\nfile:\n%s", before, after, added)
	}
	again, err := editJSONFile(added, jsonc, set)
	if err != nil || string(again) != string(added) {
		t.Fatalf("a second set changed the file (%v):\n%s", err, again)
	}
	removed, err := editJSONFile(added, jsonc, func(d *jsonDoc) error { return d.remove([]string{"mcpServers"}, "bl") })
	if err != nil {
		t.Fatalf("remove: %v", err)
	}
	want := string(src)
	if len(before) == 0 { // an empty object: setup made the file, remove takes it away
		if removed != nil {
			t.Fatalf("remove left %q, want the file gone", removed)
		}
		return
	}
	if string(removed) != want {
		t.Fatalf("remove did not give the file back:\nwant %q\ngot  %q", want, removed)
	}
}

// realJSON decodes a settings file with encoding/json, or for JSON with
// comments with hujson (the JWCC reader) first.
func realJSON(t *testing.T, b []byte, jsonc bool) map[string]any {
	t.Helper()
	if len(strings.TrimSpace(string(b))) == 0 {
		return map[string]any{}
	}
	if jsonc {
		std, err := hujson.Standardize(append([]byte(nil), b...)) // it works in place
		if err != nil {
			t.Fatalf("hujson: %v\n%s", err, b)
		}
		b = std
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("encoding/json: %v\n%s", err, b)
	}
	return m
}

// TestSetupJSONDuplicateKeys: a file naming a member twice is refused,
// since readers differ on which one counts.
func TestSetupJSONDuplicateKeys(t *testing.T) {
	for _, src := range []string{
		`{"mcpServers": {"bl": {"command": "a"}, "bl": {"command": "b"}}}`,
		`{"mcpServers": {}, "mcpServers": {"x": {}}}`,
	} {
		set := func(d *jsonDoc) error { return d.set([]string{"mcpServers"}, "bl", "x") }
		if out, err := editJSONFile([]byte(src), true, set); err == nil {
			t.Errorf("%s was edited into %s", src, out)
		}
	}
}

func TestClaudeHooksKeepOthers(t *testing.T) {
	src := "{\n  \"hooks\": {\n    \"SessionStart\": [\n      {\"matcher\": \"startup\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo mine\"}]}\n    ],\n    \"PreCompact\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"bl prime\"}]},\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"echo keep\"}]}\n    ]\n  }\n}\n"
	added, err := editJSONFile([]byte(src), false, func(d *jsonDoc) error { return claudeHooks(d, "bl prime --owner claude-x", false) })
	if err != nil {
		t.Fatal(err)
	}
	got := realJSON(t, added, false)["hooks"].(map[string]any)
	start := got["SessionStart"].([]any)
	if len(start) != 2 || !isBlHook(start[1]) || isBlHook(start[0]) {
		t.Fatalf("SessionStart = %v", start)
	}
	pre := got["PreCompact"].([]any)
	if len(pre) != 1 || isBlHook(pre[0]) {
		t.Fatalf("PreCompact = %v: bl's old hook stays or the user's went", pre)
	}
	removed, err := editJSONFile(added, false, func(d *jsonDoc) error { return claudeHooks(d, "", true) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(removed), `"echo mine"`) || strings.Contains(string(removed), "bl prime") {
		t.Fatalf("remove:\n%s", removed)
	}
}

// FuzzSetupJSON: for any file that reads, setting bl's server keeps every
// other setting (as encoding/json reads it) and removing it gives the
// bytes back.
func FuzzSetupJSON(f *testing.F) {
	for _, c := range setupJSONFiles {
		f.Add([]byte(c.src), c.jsonc)
	}
	server := orderedObject{{"command", "bl"}, {"args", []any{"mcp"}}}
	f.Fuzz(func(t *testing.T, src []byte, jsonc bool) {
		d, err := parseJSONDoc(src, jsonc)
		if err != nil || d.lookup("mcpServers") == nil && d.root.member("mcpServers") >= 0 {
			return
		}
		if o := d.lookup("mcpServers"); o != nil && (o.member("bl") >= 0 || len(o.members) == 0) {
			return // an empty mcpServers goes with bl's entry: documented
		}
		if jsonc {
			// hujson is the reference reader of JSON with comments.
			if _, err := hujson.Standardize(append([]byte(nil), src...)); err != nil {
				return
			}
		}
		checkSetupJSON(t, src, jsonc, server)
	})
}

var setupTOMLFiles = []string{
	"",
	"model = \"o4-mini\"\n",
	"model = \"gpt-5\"\napproval_policy = \"on-request\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--stdio\"]\n\n[mcp_servers.docs.env]\nTOKEN = \"x\"\n\n[profiles.fast]\nmodel = \"o4-mini\"\n",
	"# a comment\n[mcp_servers]\n\n[mcp_servers.bl]\ncommand = \"old-bl\"\nargs = [\"mcp\"]\n\n[tui]\nnotifications = true\n",
	"notify = [\n  \"notify-send\",\n  \"done\",\n]\ninstructions = \"\"\"\n[mcp_servers.bl]\nnot a table\n\"\"\"\n",
}

func TestSetupTOML(t *testing.T) {
	args := []any{"mcp", "--owner", "codex-x"}
	for _, src := range setupTOMLFiles {
		out, err := editTOMLServer([]byte(src), "bl", args, false)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		var doc map[string]any
		if err := toml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("result does not parse: %v\n%s", err, out)
		}
		if got := doc["mcp_servers"].(map[string]any)["bl"]; !reflect.DeepEqual(got, map[string]any{"command": "bl", "args": args}) {
			t.Fatalf("mcp_servers.bl = %v\n%s", got, out)
		}
		if strings.Contains(src, `"""`) && !strings.Contains(string(out), "not a table") {
			t.Fatalf("a multi-line string was cut:\n%s", out)
		}
	}
	for _, bad := range []string{
		"mcp_servers.bl.command = \"bl\"\n",
		"[mcp_servers]\nbl = { command = \"bl\" }\n",
		"mcp_servers = { bl = { command = \"bl\" } }\n",
		"[mcp_servers]\n\"bl\".command = \"bl\"\n",
		"a = 1\na = 2\n",
		"[mcp_servers.bl]\ncommand = \"bl\"\n\n[mcp_servers.bl.env]\nTOKEN = \"keepme\"\n",
	} {
		if out, err := editTOMLServer([]byte(bad), "bl", args, false); err == nil {
			t.Errorf("%q was edited into\n%s", bad, out)
		}
	}
}

// FuzzSetupTOML: whatever the file, setup either refuses it or writes a
// file that parses with bl's table as set and every other setting kept.
func FuzzSetupTOML(f *testing.F) {
	for _, s := range setupTOMLFiles {
		f.Add([]byte(s))
	}
	args := []any{"mcp"}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := editTOMLServer(src, "bl", args, false)
		if err != nil {
			return
		}
		var before, after map[string]any
		if toml.Unmarshal(src, &before) != nil {
			t.Fatalf("a file that does not parse was edited:\n%s", src)
		}
		if err := toml.Unmarshal(out, &after); err != nil {
			t.Fatalf("result does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(withoutTOMLServer(before), withoutTOMLServer(after)) {
			t.Fatalf("other settings changed:\n%s\n---\n%s", src, out)
		}
	})
}
