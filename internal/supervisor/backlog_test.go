package supervisor

import "github.com/bl-backlog/bl/ledger"

// A supervisor drives a *ledger.Backlog through the few methods it names.
var _ Backlog = (*ledger.Backlog)(nil)
