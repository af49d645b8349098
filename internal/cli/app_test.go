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
	} {
		if got := commandIn(tc.args); got != tc.want {
			t.Errorf("commandIn(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
