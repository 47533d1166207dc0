"""The remediation plan: what each node's evidence asks for, in the orchestrator's own terms.

``catalog`` reads each rule's action (``actions.toml``); ``decide`` the action of one finding; ``build``
the plan of a whole analysis (guardrails, waves, the HyperPod, Slurm and EKS forms), with the earlier
episodes a history store holds (``analyzer.history.repeats``).  The plan's records are
``analyzer.model.plan``; hptriage runs none of it.
"""
