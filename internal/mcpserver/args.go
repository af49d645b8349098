package mcpserver

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"
)

// inputSchema is the JSON schema of a tool's arguments In, from its tags;
// owner arguments are optional when the server has an owner of its own.
func inputSchema[In any](haveOwner bool) map[string]any {
	props := map[string]any{}
	required := []string{}
	t := reflect.TypeFor[In]()
	for i := range t.NumField() {
		f := t.Field(i)
		name := jsonName(f)
		p := map[string]any{"description": f.Tag.Get("desc")}
		typ := f.Type
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch typ.Kind() {
		case reflect.String:
			p["type"] = "string"
		case reflect.Int, reflect.Int64:
			p["type"] = "integer"
		case reflect.Bool:
			p["type"] = "boolean"
		case reflect.Slice:
			items := map[string]any{"type": "string"}
			if e := f.Tag.Get("enum"); e != "" {
				items["enum"] = strings.Split(e, ",")
			}
			p["type"], p["items"] = "array", items
		}
		if e := f.Tag.Get("enum"); e != "" && typ.Kind() == reflect.String {
			p["enum"] = strings.Split(e, ",")
		}
		switch f.Tag.Get("mcp") {
		case "required", "arg":
			required = append(required, name)
		case "owner":
			if !haveOwner {
				required = append(required, name)
			}
		case "epoch":
			p["minimum"] = 1
			required = append(required, name)
		}
		if name == "progress" {
			p["minimum"], p["maximum"] = 0, 100
		}
		if name == "limit" {
			p["minimum"], p["maximum"] = 1, maxLimit
		}
		props[name] = p
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

const maxLimit = 1000

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// decodeArgs checks raw against in's schema and fills in: the SDK leaves
// that to a tool added without its generic helper, so every failure here
// is an error object of the one shape (usage, exit code 2) rather than a
// protocol error or the SDK's plain text.
func decodeArgs(raw json.RawMessage, in any, owner string) *errorObject {
	v := reflect.ValueOf(in).Elem()
	t := v.Type()
	var names []string
	for i := range t.NumField() {
		names = append(names, jsonName(t.Field(i)))
	}
	args, msg := argsObject(raw, names)
	for i := 0; msg == "" && i < len(names); i++ {
		msg = decodeField(t.Field(i), v.Field(i), names[i], args, owner)
	}
	if msg != "" {
		e := usageError(msg)
		return &e
	}
	return nil
}

// argsObject reads raw as a JSON object (absent or null: no arguments)
// whose members are all among names; a message says what is wrong.
func argsObject(raw json.RawMessage, names []string) (map[string]json.RawMessage, string) {
	args := map[string]json.RawMessage{}
	if raw = bytes.TrimSpace(raw); len(raw) > 0 && string(raw) != "null" {
		if raw[0] != '{' || json.Unmarshal(raw, &args) != nil {
			return nil, "the arguments must be a JSON object"
		}
	}
	for k := range args {
		if !slices.Contains(names, k) {
			if len(names) == 0 {
				return nil, fmt.Sprintf("unknown argument %q: this tool takes no arguments", k)
			}
			return nil, fmt.Sprintf("unknown argument %q: this tool takes %s", k, strings.Join(names, ", "))
		}
	}
	return args, ""
}

// decodeField fills one field from its argument (null counts as not
// given) and checks it against the field's tags; a message says what is
// wrong.
func decodeField(f reflect.StructField, fv reflect.Value, name string, args map[string]json.RawMessage, owner string) string {
	val, given := args[name]
	if given && string(val) == "null" {
		given = false
	}
	if given {
		if err := json.Unmarshal(val, fv.Addr().Interface()); err != nil {
			return fmt.Sprintf("argument %s must be %s, not %s", name, kindName(f.Type), clip(val))
		}
	}
	if msg := checkEnum(f, fv, name); msg != "" {
		return msg
	}
	if msg := applyMCPTag(f, fv, name, given, owner); msg != "" {
		return msg
	}
	return checkRange(fv, name, given)
}

// checkEnum checks a field with an enum tag (a string or a list of them)
// holds only the values it names.
func checkEnum(f reflect.StructField, fv reflect.Value, name string) string {
	e := f.Tag.Get("enum")
	if e == "" {
		return ""
	}
	allowed := strings.Split(e, ",")
	vals := []string{fv.String()}
	if fv.Kind() == reflect.Slice {
		vals = fv.Interface().([]string)
	}
	for _, s := range vals {
		if s != "" && !slices.Contains(allowed, s) {
			return fmt.Sprintf("argument %s: %q is not one of %s", name, s, strings.Join(allowed, ", "))
		}
	}
	return ""
}

// applyMCPTag does what a field's mcp tag asks: required arguments must
// be given, an owner left out is the server's, an epoch is at least 1.
func applyMCPTag(f reflect.StructField, fv reflect.Value, name string, given bool, owner string) string {
	switch f.Tag.Get("mcp") {
	case "required", "arg":
		if !given || fv.Kind() == reflect.String && strings.TrimSpace(fv.String()) == "" {
			return fmt.Sprintf("argument %s is required", name)
		}
	case "myowner":
		if fv.String() == "" {
			fv.SetString(owner)
		}
	case "owner":
		if fv.String() == "" {
			if owner == "" {
				return "argument owner is required: your owner name, the same on every call (or give the server one: BL_OWNER)"
			}
			fv.SetString(owner)
		}
	case "epoch":
		if fv.Int() < 1 {
			return "argument epoch is required: the claim_epoch that claim returned (at least 1)"
		}
	}
	return ""
}

// checkRange checks the arguments with bounds of their own by name.
func checkRange(fv reflect.Value, name string, given bool) string {
	switch {
	case name == "progress" && given && (fv.Elem().Int() < 0 || fv.Elem().Int() > 100):
		return "argument progress must be between 0 and 100"
	case name == "limit" && given && (fv.Elem().Int() < 1 || fv.Elem().Int() > maxLimit):
		return fmt.Sprintf("argument limit must be between 1 and %d", maxLimit)
	case name == "body" && fv.Kind() == reflect.String && fv.String() == "-":
		return `argument body "-" would read standard input; give the text itself`
	}
	return ""
}

func kindName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "an array of strings"
	}
	return t.String()
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// commandLine turns a tool's arguments into the command line they stand
// for: each set field as --flag=value (a list as the flag repeated), then
// the positional argument after --.
func commandLine(command string, in any) []string {
	args := []string{command}
	var positional, after []string
	v := reflect.ValueOf(in).Elem()
	for i := range v.NumField() {
		f, val := v.Type().Field(i), v.Field(i)
		flag := "--" + strings.ReplaceAll(jsonName(f), "_", "-")
		switch f.Tag.Get("mcp") {
		case "arg":
			positional = append(positional, val.String())
			continue
		case "optarg":
			if val.String() != "" {
				after = append(after, val.String())
			}
			continue
		case "local":
			continue
		}
		switch val.Kind() {
		case reflect.String:
			if s := val.String(); s != "" {
				args = append(args, flag+"="+s)
			}
		case reflect.Int, reflect.Int64:
			if n := val.Int(); n != 0 {
				args = append(args, flag+"="+strconv.FormatInt(n, 10))
			}
		case reflect.Bool:
			if val.Bool() {
				args = append(args, flag)
			}
		case reflect.Pointer:
			if val.IsNil() {
				continue
			}
			if e := val.Elem(); e.Kind() == reflect.String {
				args = append(args, flag+"="+e.String())
			} else {
				args = append(args, flag+"="+strconv.FormatInt(e.Int(), 10))
			}
		case reflect.Slice:
			for k := range val.Len() {
				args = append(args, flag+"="+val.Index(k).String())
			}
		}
	}
	if positional = append(positional, after...); len(positional) > 0 {
		args = append(append(args, "--"), positional...)
	}
	return args
}
