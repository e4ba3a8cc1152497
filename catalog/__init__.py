"""What is known: step manifests, discovery, the artifact type graph, contracts, pipelines.

Pure and fast: nothing here imports `runners`, torch, ray or NeMo-RL.
"""
