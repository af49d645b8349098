package cli

import (
	"reflect"
	"testing"
)

// TestGlobalsWithValue keeps commandIn in step with Globals: every global
// flag that takes a value must be skipped with its value when looking for
// the command name.
func TestGlobalsWithValue(t *testing.T) {
	typ := reflect.TypeOf(Globals{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := "--" + f.Tag.Get("name")
		if takes := f.Type.Kind() != reflect.Bool; takes != globalsWithValue[name] {
			t.Errorf("global flag %s takes a value: %v, but globalsWithValue says %v", name, takes, globalsWithValue[name])
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"claim", "--owner", "w"}, "claim"},
		{[]string{"--dir", "D", "--actor", "a", "claim"}, "claim"},
		{[]string{"--json", "--dir=D", "ready"}, "ready"},
		{[]string{"--lock-timeout", "5s", "heartbeat"}, "heartbeat"},
		{[]string{"--dir", "claim"}, ""}, // "claim" is the directory here
		{[]string{"nosuch", "claim"}, ""},
		{[]string{"done", "A1"}, "complete"}, // an alias names its command
	} {
		if got, _ := commandIn(tc.args); got != tc.want {
			t.Errorf("commandIn(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestSuggestCommand: a typo is answered with the closest command, but
// never with one that runs programs or rewrites the backlog.
func TestSuggestCommand(t *testing.T) {
	for word, want := range map[string]string{
		"creat":  "create",
		"lsit":   "list",
		"shwo":   "show", // a swap of neighbours is one edit
		"shw":    "show",
		"sohw":   "show",
		"xxxx":   "",
		"rm":     "", // not run
		"rn":     "", // not run
		"int":    "", // not init
		"snyc":   "", // not sync
		"claimm": "claim",
		"Done":   "done", // the alias, for complete
		"eidt":   "edit",
		"relase": "", // not release
		"ur":     "",
		"xyzzy":  "",
	} {
		if got := suggestCommand(word); got != want {
			t.Errorf("suggestCommand(%q) = %q, want %q", word, got, want)
		}
	}
}
