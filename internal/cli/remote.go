package cli

import "github.com/bl-backlog/bl/ledger"

// The owner commands (claim, heartbeat, release, complete, block) run
// locally, or through a git remote shared by several machines when one is
// named by --remote or by claims.remote in config.json: then the write is
// acknowledged only once the push carrying it succeeded (see bl sync). In
// the lean bl that work is handed to bl-git (gitWork, before anything is
// read).

// remoteFor is the remote an owner command goes through: the flag, else
// claims.remote in config.json, else none.
func remoteFor(b *ledger.Backlog, flag string) string {
	return firstOf(flag, b.Config().Claims.Remote)
}

// throughRemote returns the git side and the remote the owner command cmd
// goes through, or a nil Git when it runs locally.
func (a *App) throughRemote(b *ledger.Backlog, cmd, flag string) (Git, string, error) {
	remote := remoteFor(b, flag)
	if remote == "" {
		return nil, "", nil
	}
	g, err := a.needGit(remoteWhat(cmd, remote))
	if err != nil {
		return nil, "", err
	}
	a.synced = true
	return g, remote, nil
}

// ownerWrite runs do, the write of the owner command cmd (heartbeat,
// release, complete, block), locally or through the remote. do stamps its
// event with the request id it is given: the caller's, or on a remote one
// that tells a retried push's attempts apart.
func (a *App) ownerWrite(b *ledger.Backlog, cmd, remoteFlag, requestID string, do func(requestID string) (ledger.Card, error)) (ledger.Card, error) {
	g, remote, err := a.throughRemote(b, cmd, remoteFlag)
	if err != nil {
		return ledger.Card{}, err
	}
	if g == nil {
		return do(requestID)
	}
	return g.Lease(a, b, remote, requestID, do)
}
