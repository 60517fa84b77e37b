"""`sdk deploy`: model to a validated on-target result (sdk.deploy.pipeline.deploy)."""

from sdk.deploy.pipeline import deploy

__all__ = ["deploy"]
