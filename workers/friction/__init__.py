"""Friction analysis (seed 004): how each session went for its user, read from its events
(`signals`), and what the worst sessions teach (`lessons`: antigen candidates, behavioural
preferences). Pure: events in, scores and derived events out; reverie/friction.py reads the
transcripts and the event log, writes the files and emits."""
