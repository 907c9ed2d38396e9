"""What PathMind needs, checked before any work (no torch here): the packages it imports, and a
trained model's folder and the graph it was trained on."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from adapath.errors import InputError

# import name -> why PathMind needs it; both come with the `pathmind` extra
PACKAGES = {"torch": "the priority network", "safetensors": "the model's weights"}
INSTALL = 'pip install torch==2.13.0 && pip install -e ".[pathmind]"'
# the reasoner's fine-tuning (`pathmind finetune`): the `train` extra
TRAIN_PACKAGES = {"torch": "training", "transformers": "the base model", "datasets": "trl's data",
                  "peft": "the LoRA adapter", "trl": "SFT and DPO"}
TRAIN_INSTALL = 'pip install torch==2.13.0 && pip install -e ".[train]"'


def check_installed(command: str, packages: dict = PACKAGES, install: str = INSTALL) -> None:
    """One line naming the extra to install when a package the command imports is missing, so
    a run fails before its first step rather than after an epoch."""
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(f"{command} needs {', '.join(missing)}, not installed: {install}")


def model_settings(model: Path) -> dict:
    """A trained model's config.json (one line where the folder is not a model)."""
    config = Path(model) / "config.json"
    if not config.is_file() or not (Path(model) / "model.safetensors").is_file():
        raise InputError(f"{model}: not a PathMind model (config.json + model.safetensors)")
    try:
        meta = json.loads(config.read_text())
    except (ValueError, UnicodeDecodeError):
        meta = None
    if not isinstance(meta, dict):
        raise InputError(f"{config}: not a PathMind model's config (not a JSON object)")
    return meta


def check_model_graph(model: Path, checksum: str, graph_dir: Path) -> dict:
    """Refuse a model trained on another graph than ``graph_dir``'s (whose checksum is given);
    return its settings."""
    meta = model_settings(model)
    trained_on = meta.get("graph_checksum")
    if trained_on != checksum:
        raise InputError(f"{model}: this PathMind model was trained on another graph (checksum "
                         f"{str(trained_on)[:12]}, {graph_dir} has {checksum[:12]}); train one on it with "
                         f"`adapath pathmind train --kg {graph_dir}`")
    return meta


def model_encoder(meta: dict) -> str | None:
    """The question encoder a model was trained with (and answers with)."""
    train = meta.get("train")
    return train.get("encoder") if isinstance(train, dict) else None
