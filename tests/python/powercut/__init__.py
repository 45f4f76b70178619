"""A fault-injecting filesystem for power-cut tests, in the style of Jepsen's LazyFS.

`model` is the in-memory filesystem that remembers, for every file, what it holds now
and what a power cut would leave of it; `fusefs` serves it through FUSE (mfusepy);
`daemon` is the separate process that mounts it and takes "cut" / "keep" / "quit" between
mounts; `driver` starts that process and tears mounts down for the tests; `service`
runs the a2a-commands binary and reads its log; `ledger` is what the clients know was
acknowledged and checks a restarted registry against it.
"""
