//go:build !linux

package supervisor

import "errors"

// containSupported: no subreapers here (see the package doc).
const containSupported = false

type launcher struct{ exited chan struct{} }

func newLauncher() (*launcher, error) { return nil, errors.ErrUnsupported }

func (*launcher) close() {}

func (*launcher) start(spec) (*proc, error) { return nil, errors.ErrUnsupported }

// IsLauncher reports whether this process was started as bl run's
// launcher: never, here.
func IsLauncher() bool { return false }

// RunLauncher is not used here.
func RunLauncher() int { return 2 }
