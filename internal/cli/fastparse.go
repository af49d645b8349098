package cli

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// The agents' hot commands (claim, create, heartbeat, complete, note),
// their reads (ready, show), a reviewer's bl diff and bl version (--version, the call that
// measures a start) are parsed here, by hand, before kong: building
// kong's model of a command by reflection costs about as much CPU as the
// claim itself. The fast parse takes only command lines it understands completely — long flags
// of the command and the globals, in either form, and plain words as
// arguments — and gives every other line (help, short flags, "--", an
// unknown flag, a value that does not read, one argument too many) to
// kong, which parses it or reports the mistake. It never errors and
// never guesses: what it accepts, kong parses to the same struct
// (TestFastParseMatchesKong, FuzzFastParse).

// fastFlag is one long flag: set takes its value and reports whether it
// read; a bool flag takes none.
type fastFlag struct {
	name   string
	isBool bool
	set    func(v string) bool
}

// fastCommand is a hot command's struct with its flags and its
// arguments: args takes the one run of plain words after the command
// name, and reports whether the command takes that many.
type fastCommand struct {
	cmd     any
	flags   []fastFlag
	args    func(words []string) bool
	needArg bool // kong requires an argument (bl note)
}

// fastCommands builds the hot commands' parses; the names are canonical
// (commandIn turns an alias into its command).
var fastCommands = map[string]func() fastCommand{
	"claim": func() fastCommand {
		c := &ClaimCmd{TTL: 15 * time.Minute}
		return fastCommand{cmd: c, args: oneWord(&c.IDArg), flags: append([]fastFlag{
			fastString("owner", &c.Owner), fastDuration("ttl", &c.TTL), fastStringPtr("id", &c.IDFlag),
			fastString("phase", &c.Phase), fastString("label", &c.Label), fastBool("any", &c.Any),
			fastBool("mine", &c.Mine), fastDuration("wait", &c.Wait), fastString("request-id", &c.RequestID),
			fastBool("review", &c.Review)}, remoteFlags(&c.remoteChoice)...)}
	},
	"create": func() fastCommand {
		c := &CreateCmd{}
		return fastCommand{cmd: c, args: func(w []string) bool { c.TitleArg = w; return true }, flags: []fastFlag{
			fastString("title", &c.Title), fastStringPtr("id", &c.ID), fastString("body", &c.Body),
			fastString("phase", &c.Phase), fastInt("priority", &c.Priority), fastList("depends-on", &c.DependsOn, ','),
			fastString("parent", &c.Parent), fastList("label", &c.Label, ','), fastList("acceptance", &c.Acceptance, -1),
			fastInt("max-attempts", &c.MaxAttempts), fastString("defer-until", &c.DeferUntil),
			fastString("idempotency-key", &c.IdempotencyKey), fastList("paths", &c.Paths, -1),
			fastString("assignee", &c.Assignee), fastString("request-id", &c.RequestID)}}
	},
	"heartbeat": func() fastCommand {
		c := &HeartbeatCmd{}
		return fastCommand{cmd: c, args: oneWord(&c.IDArg), flags: append([]fastFlag{
			fastStringPtr("id", &c.IDFlag), fastString("owner", &c.Owner), fastInt64("epoch", &c.Epoch),
			{name: "ttl", set: func(v string) bool {
				d, err := time.ParseDuration(v)
				c.TTL = &d
				return err == nil
			}},
			{name: "progress", set: func(v string) bool {
				n, err := strconv.ParseInt(v, 10, strconv.IntSize)
				p := int(n)
				c.Progress = &p
				return err == nil
			}},
			fastString("checkpoint", &c.Checkpoint), fastString("request-id", &c.RequestID)}, remoteFlags(&c.remoteChoice)...)}
	},
	"complete": func() fastCommand {
		c := &CompleteCmd{}
		return fastCommand{cmd: c, args: oneWord(&c.IDArg), flags: append([]fastFlag{
			fastStringPtr("id", &c.IDFlag), fastString("owner", &c.Owner), fastInt64("epoch", &c.Epoch),
			fastString("note", &c.Note), fastString("duplicate-of", &c.DuplicateOf),
			fastString("superseded-by", &c.SupersededBy), fastBool("review", &c.Review),
			fastString("commit", &c.Commit), fastString("branch", &c.Branch),
			fastString("request-id", &c.RequestID)}, remoteFlags(&c.remoteChoice)...)}
	},
	"version": func() fastCommand { // bl --version: the globals only
		return fastCommand{cmd: &VersionCmd{}, args: func([]string) bool { return false }}
	},
	"ready": func() fastCommand {
		c := &ReadyCmd{}
		return fastCommand{cmd: c, args: func([]string) bool { return false }, flags: []fastFlag{
			fastString("phase", &c.Phase), fastString("label", &c.Label), fastInt("limit", &c.Limit),
			fastString("owner", &c.Owner), fastBool("any", &c.Any), fastBool("mine", &c.Mine)}}
	},
	"show": func() fastCommand {
		c := &ShowCmd{}
		return fastCommand{cmd: c, args: oneWord(&c.IDArg), flags: []fastFlag{fastStringPtr("id", &c.IDFlag)}}
	},
	"diff": func() fastCommand { // a reviewer's bl diff OLD NEW
		c := &DiffCmd{}
		return fastCommand{cmd: c, args: func(w []string) bool { c.Revs = w; return true }, flags: []fastFlag{
			fastString("merge", &c.Merge)}}
	},
	"note": func() fastCommand {
		c := &NoteCmd{}
		return fastCommand{cmd: c, needArg: true, args: func(w []string) bool { c.Text = w; return true }, flags: []fastFlag{
			fastStringPtr("id", &c.ID), fastString("owner", &c.Owner), fastInt64("epoch", &c.Epoch),
			fastString("request-id", &c.RequestID)}}
	},
}

// fastParse parses args (normalized, the command name found by
// commandIn as name) when name is a hot command and the line holds
// nothing the fast parse does not understand; ok false hands the line to
// kong. getenv is the App's environment (kong's resolver); the process's
// is read after it, as kong itself does.
func fastParse(name string, args []string, getenv func(string) string) (cmd any, g Globals, ok bool) {
	build, hot := fastCommands[name]
	if !hot {
		return nil, g, false
	}
	fc := build()
	var dir, actor *string
	g.LockTimeout = 10 * time.Second
	globals := []fastFlag{
		fastStringPtr("dir", &dir), fastBool("json", &g.JSON), fastStringPtr("actor", &actor),
		fastDuration("lock-timeout", &g.LockTimeout)}
	seenCommand, inRun, runDone := false, false, false
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") || a == "--" {
			switch {
			case strings.HasPrefix(a, "-"):
				return nil, g, false // a short flag, "-" or "--": kong's
			case !seenCommand:
				seenCommand = true // the command's word (commandIn found it)
			case runDone:
				// A second run of words, after a flag: kong takes one
				// run of words per argument.
				return nil, g, false
			default:
				words, inRun = append(words, a), true
			}
			continue
		}
		if inRun {
			inRun, runDone = false, true
		}
		flagName, value, hasValue := strings.Cut(a[2:], "=")
		f, found := fastFlagNamed(flagName, globals)
		if !found && seenCommand {
			f, found = fastFlagNamed(flagName, fc.flags)
		}
		if !found {
			return nil, g, false
		}
		if f.isBool {
			if hasValue {
				return nil, g, false
			}
			f.set("")
			continue
		}
		if !hasValue {
			if i+1 == len(args) || (strings.HasPrefix(args[i+1], "-") && args[i+1] != "-") {
				return nil, g, false
			}
			i++
			value = args[i]
		}
		if !f.set(value) {
			return nil, g, false
		}
	}
	if !seenCommand || (fc.needArg && len(words) == 0) {
		return nil, g, false
	}
	if len(words) > 0 && !fc.args(words) {
		return nil, g, false
	}
	g.Dir = fromEnv(dir, "BL_DIR", getenv)
	g.Actor = fromEnv(actor, "BL_ACTOR", getenv)
	return fc.cmd, g, true
}

// fromEnv is a global flag's value: given, else the App's variable, else
// the process's (kong's reset reads it even when empty).
func fromEnv(given *string, env string, getenv func(string) string) string {
	if given != nil {
		return *given
	}
	if v := getenv(env); v != "" {
		return v
	}
	return os.Getenv(env)
}

func fastFlagNamed(name string, flags []fastFlag) (fastFlag, bool) {
	for _, f := range flags {
		if f.name == name {
			return f, true
		}
	}
	return fastFlag{}, false
}

// oneWord is the optional single argument of the card commands.
func oneWord(p **string) func([]string) bool {
	return func(w []string) bool {
		if len(w) != 1 {
			return false
		}
		*p = &w[0]
		return true
	}
}

func remoteFlags(r *remoteChoice) []fastFlag {
	return []fastFlag{fastString("remote", &r.Remote), fastBool("local", &r.Local), fastString("arbiter", &r.Arbiter)}
}

func fastString(name string, p *string) fastFlag {
	return fastFlag{name: name, set: func(v string) bool { *p = v; return true }}
}

func fastStringPtr(name string, p **string) fastFlag {
	return fastFlag{name: name, set: func(v string) bool { *p = &v; return true }}
}

func fastBool(name string, p *bool) fastFlag {
	return fastFlag{name: name, isBool: true, set: func(string) bool { *p = true; return true }}
}

func fastDuration(name string, p *time.Duration) fastFlag {
	return fastFlag{name: name, set: func(v string) bool {
		d, err := time.ParseDuration(v)
		*p = d
		return err == nil
	}}
}

// fastInt and fastInt64 read base 10 only, as decimalInt does.
func fastInt(name string, p *int) fastFlag {
	return fastFlag{name: name, set: func(v string) bool {
		n, err := strconv.ParseInt(v, 10, strconv.IntSize)
		*p = int(n)
		return err == nil
	}}
}

func fastInt64(name string, p *int64) fastFlag {
	return fastFlag{name: name, set: func(v string) bool {
		n, err := strconv.ParseInt(v, 10, 64)
		*p = n
		return err == nil
	}}
}

// fastList is a list flag, split at sep (-1: not split) as rawStrings
// splits it.
func fastList(name string, p *[]string, sep rune) fastFlag {
	return fastFlag{name: name, set: func(v string) bool {
		if *p == nil {
			*p = []string{} // given, if empty: as kong leaves it
		}
		*p = append(*p, splitEscaped(v, sep)...)
		return true
	}}
}
