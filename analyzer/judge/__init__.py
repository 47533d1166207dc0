"""Judging the store: the rule engine, coverage (checked / not examined), settings and thresholds, peers, shared signals, the rules and the Xid catalog."""
