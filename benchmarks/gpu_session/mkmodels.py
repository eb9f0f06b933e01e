"""Random-initialised copies of all-MiniLM-L6-v2 and all-mpnet-base-v2 from their real configs and tokenizers
(carried without weights, which do not fit a transfer): same layers, widths and token counts, so the same cost per
text; what they rank means nothing.

    python mkmodels.py OUT      # reads .devcarry/models/{minilm,mpnet}, writes OUT/{minilm,mpnet}
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch

try:  # this project's CPU machines need it before transformers imports torchvision; the GPU image does not
    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
except ImportError:
    pass
from transformers import AutoConfig, AutoModel  # noqa: E402


def main(out: Path) -> None:
    for name in ("minilm", "mpnet"):
        dst = out / name
        if (dst / "model.safetensors").exists():
            continue
        shutil.copytree(Path(".devcarry/models") / name, dst, dirs_exist_ok=True)
        (dst / "2_Normalize").mkdir(exist_ok=True)
        torch.manual_seed(0)
        model = AutoModel.from_config(AutoConfig.from_pretrained(dst))
        model.save_pretrained(dst)
        print(name, sum(p.numel() for p in model.parameters()), "parameters ->", dst)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
