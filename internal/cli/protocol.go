package cli

// AgentProtocol is how an agent works through the backlog: what bl prime
// prints first, and what bl mcp serves as its instructions, its prompt
// and the resource bl://protocol. One text, so the two never disagree.
const AgentProtocol = `# bl: how to work through this backlog
1. claim: get your next task (MCP tool claim, or bl claim --owner ME --ttl 15m --json).
   Keep its id and claim_epoch. null means nothing is claimable now.
2. Work on that card only. heartbeat (id, owner, epoch) every ttl/3 (every 5m for 15m).
   note (id, owner, epoch, text) what you learn, for whoever comes next.
3. complete (id, owner, epoch, note) when done; fail (id, owner, epoch, reason) when the
   attempt failed (it is retried); release (id, owner, epoch) to give it back untouched.
4. An error with code "fenced" means your lease is gone: stop, discard your uncommitted
   work on that card, and claim again. Never write to a card you do not hold.
Use one owner name for the whole session. Found other work? create a card for it.
`
