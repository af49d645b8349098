package cli

import (
	"fmt"
	"path/filepath"

	"github.com/bl-backlog/bl/ledger"
)

// An owner command decides on its settings twice: before the backlog is
// opened (whether bl-git runs it: handover.go) and as it runs (whether it
// goes through an arbiter or a remote). Each settings file is read once
// per run, so both decisions see one reading and a hot write pays for one.

// settings are the files read, kept on the App.
type settings struct {
	config     *ledger.Config   // config.json, once read without error; Open takes it
	arbiter    *ArbiterSettings // .backlog/arbiter.json, once read
	arbiterErr error
}

// config is the backlog's config.json: the open backlog's, else the file,
// read once.
func (a *App) config() (ledger.Config, error) {
	if a.backlog != nil {
		return a.backlog.Config(), nil
	}
	if a.settings.config == nil {
		dir, err := a.findDir()
		if err != nil {
			return ledger.Config{}, err
		}
		cfg, err := ledger.ReadConfig(dir)
		if err != nil {
			return ledger.Config{}, err // Open reports it
		}
		a.settings.config = &cfg
	}
	return *a.settings.config, nil
}

// localArbiter is the arbiter.json of the backlog in dir, read once.
func (a *App) localArbiter(dir string) (ArbiterSettings, error) {
	if a.settings.arbiter == nil {
		s, err := readArbiterFile(a.ctx, dir)
		a.settings.arbiter, a.settings.arbiterErr = &s, err
	}
	return *a.settings.arbiter, a.settings.arbiterErr
}

// A long-running process (bl mcp, bl daemon, bl serve, bl run --loop)
// takes config.json again before each request, call or card: a pull or an
// edit then holds from the next one on (a review gate turned on, a remote
// for claims), and the request under way keeps the settings it started
// with. hooks.json and arbiter.json are read where they are used (each
// hook point, each call), so they need nothing here.

// Reloaded is the backlog the next request runs on: cur with config.json as
// it stands now (ledger.Backlog.Reload). A change is said with note; a file
// that fails the checks start-up makes (a link out of the backlog, a FIFO,
// over 1 MiB, garbage, a setting named twice, gone) is said once with warn
// and the settings stay as they were: the process never stops for it.
// Both messages come with control characters escaped.
func Reloaded(cur *ledger.Backlog, warn, note func(string)) *ledger.Backlog {
	b, err := cur.Reload()
	switch {
	case err != nil:
		warn(text(fmt.Sprintf("%v; going on with the settings read before", err)))
	case b != cur:
		note(text(fmt.Sprintf("%s changed: what starts from now on runs with its settings", filepath.Join(b.Dir(), ledger.ConfigFile))))
	}
	return b
}
