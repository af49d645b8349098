package cli

import "github.com/bl-backlog/bl/ledger"

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
