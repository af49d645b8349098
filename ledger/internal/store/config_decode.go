package store

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// decodeConfig reads config.json over cfg. Every bl call reads it, and the
// JSON decoder's first use in a process costs more than the read, so a file
// of the usual shape is read here: an object, white space anywhere, the
// members Config knows and any others, which are stepped over. A file in
// any other shape goes to the JSON decoder: a null, a name with an escape
// or that matches a known one only when case is folded, a number that is
// not an integer of at most 18 digits, a value of the wrong type. The JSON
// decoder gives the same Config for every file read here.
//
// A file that names a field of Config twice in one object (compared as
// the decoder matches names: unescaped, case folded) is refused: the
// decoder would take the last value while a teammate reviewing the file
// reads the first. Names the decoder does not read (inside hooks, members
// Config does not have) are no value bl takes, whichever path reads the
// file.
func decodeConfig(data []byte, cfg *Config) error {
	c := *cfg
	if i := configObject(data, wire.SkipSpace(data, 0), configMembers(data, &c)); i >= 0 && wire.SkipSpace(data, i) == len(data) {
		*cfg = c
		return nil
	}
	if k := configRepeatedKey(data); k != "" {
		return fmt.Errorf("it names %q twice in one object: bl would take the last value while a reader of the file sees the first; keep one", k)
	}
	return json.Unmarshal(data, cfg)
}

// configRepeatedKey returns a name of config.json that the decoder reads
// into a field of Config, or of an object of Config, which the file names
// twice in one object (compared case folded, as the decoder matches), or
// "". Names the decoder does not read (inside hooks, members Config does
// not have) are not looked at: bl never takes their value.
func configRepeatedKey(b []byte) string {
	return repeatedField(b, wire.SkipSpace(b, 0), reflect.TypeFor[Config]())
}

// repeatedField is configRepeatedKey for the object at b[i:], read into
// struct type t; "" also when b is not such an object (the decoder says
// why).
func repeatedField(b []byte, i int, t reflect.Type) string {
	if i < 0 || i >= len(b) || b[i] != '{' {
		return ""
	}
	if i = wire.SkipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return ""
	}
	seen := map[string]bool{}
	for {
		start, end, esc, j := wire.ScanString(b, i)
		if j < 0 {
			return ""
		}
		key := esc
		if esc == "" {
			key = string(b[start:end])
		}
		if i = wire.SkipSpace(b, j); i >= len(b) || b[i] != ':' {
			return ""
		}
		i = wire.SkipSpace(b, i+1)
		if f, ok := jsonField(t, key); ok {
			if seen[f.Name] {
				return key
			}
			seen[f.Name] = true
			if f.Type.Kind() == reflect.Struct {
				if k := repeatedField(b, i, f.Type); k != "" {
					return k
				}
			}
		}
		if _, i = wire.WalkValue(nil, b, i, true, 0); i < 0 {
			return ""
		}
		if i = wire.SkipSpace(b, i); i >= len(b) || b[i] != ',' {
			return ""
		}
		i = wire.SkipSpace(b, i+1)
	}
}

// jsonField is the field of struct type t that the JSON decoder fills from
// a member named key.
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && strings.EqualFold(name, key) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// configMembers reads the members of the top-level object into c.
func configMembers(b []byte, c *Config) func(string, int) int {
	return func(key string, i int) int {
		switch key {
		case "version":
			c.Version, i = wire.ScanInt(b, i)
		case "compact_bytes":
			c.CompactBytes, i = wire.ScanInt64(b, i)
		case "id":
			i = configStrings(b, map[string]*string{"id": &c.ID})(key, i)
		case "sync":
			s := &c.Sync
			i = configObject(b, i, configStrings(b, map[string]*string{"auto": &s.Auto, "remote": &s.Remote, "branch": &s.Branch, "board": &s.Board}))
		case "claims":
			i = configObject(b, i, configStrings(b, map[string]*string{"remote": &c.Claims.Remote}))
		case "retry_backoff":
			r := &c.RetryBackoff
			i = configObject(b, i, configStrings(b, map[string]*string{"initial": &r.Initial, "max": &r.Max}))
		case "epics":
			i = -1 // rare: the JSON decoder reads it
		case "hooks":
			start := i
			if i < len(b) && b[i] != 'n' {
				if _, i = wire.WalkValue(nil, b, i, true, 0); i >= 0 {
					c.Hooks = append(json.RawMessage(nil), b[start:i]...)
				}
			} else {
				i = -1
			}
		case "review", "worktree":
			i = -1 // rarely set: the JSON decoder reads them
		default:
			i = configUnknown(b, key, i, "version", "id", "compact_bytes", "sync", "claims", "retry_backoff", "hooks")
		}
		return i
	}
}

// configStrings reads the members of an object of strings into the
// fields named.
func configStrings(b []byte, fields map[string]*string) func(string, int) int {
	return func(key string, i int) int {
		dst, ok := fields[key]
		if !ok {
			known := make([]string, 0, len(fields))
			for k := range fields {
				known = append(known, k)
			}
			return configUnknown(b, key, i, known...)
		}
		start, end, esc, j := wire.ScanString(b, i)
		if j >= 0 {
			*dst = esc
			if esc == "" {
				*dst = string(b[start:end])
			}
		}
		return j
	}
}

// configUnknown steps over the value of a member Config does not have: -1
// when its name matches a known one with case folded, which the JSON
// decoder would fill.
func configUnknown(b []byte, key string, i int, known ...string) int {
	if slices.ContainsFunc(known, func(k string) bool { return strings.EqualFold(k, key) }) {
		return -1
	}
	_, i = wire.WalkValue(nil, b, i, true, 0)
	return i
}

// configObject reads the object at b[i:], white space allowed, calling
// member with each member's name and the index of its value; member returns
// the index after the value, or -1. It returns the index after the object,
// or -1 for anything but an object whose names are plain strings, none
// repeated.
func configObject(b []byte, i int, member func(key string, i int) int) int {
	if i < 0 || i >= len(b) || b[i] != '{' {
		return -1
	}
	if i = wire.SkipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return i + 1
	}
	var seen []string
	for {
		start, end, esc, j := wire.ScanString(b, i)
		if j < 0 || esc != "" {
			return -1
		}
		key := string(b[start:end])
		if slices.Contains(seen, key) {
			return -1
		}
		seen = append(seen, key)
		if i = wire.SkipSpace(b, j); i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = member(key, wire.SkipSpace(b, i+1)); i < 0 {
			return -1
		}
		if i = wire.SkipSpace(b, i); i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = wire.SkipSpace(b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}
