"""Model zoo for the benchmarks: name -> how to build the model and its input for a batch size.

Every model is built from a fixed seed with random weights (torchvision ``weights=None``; nothing
is downloaded). Models with BatchNorm get their running statistics from a few forward passes over
random data first, so activations stay in a realistic range: with the default statistics (mean 0,
variance 1) a 50-layer random network can grow activations past the float16 range, and every
fp16 accuracy number would then be an overflow artefact rather than a property of the engine.

``smoke=True`` shrinks shapes (small images, ViT on 32x32) so the whole pipeline runs on a CPU.
"""
import dataclasses
import importlib.util
import os
import sys

import torch

_SEED = 20240607


@dataclasses.dataclass
class ModelSpec:
    name: str
    needs: str            # "torchvision", "graft" or "" (plain torch)
    make: object          # (smoke) -> torch.nn.Module, on the CPU, float32
    sample_shape: object  # (smoke) -> per-sample input shape (without the batch axis)
    note: str = ""

    def build(self, smoke=False, device="cpu"):
        """The model in eval mode on `device`, float32, deterministic for a given torch version."""
        torch.manual_seed(_SEED)
        model = self.make(smoke)
        model = model.to(device)
        _calibrate_batchnorm(model, self.input(8 if not smoke else 4, smoke, device))
        return model.eval()

    def input(self, batch, smoke=False, device="cpu", dtype=torch.float32):
        """A fresh random input of `batch` samples, the same for every process (seeded by batch)."""
        g = torch.Generator().manual_seed(_SEED + 7919 * batch)
        x = torch.randn((batch,) + tuple(self.sample_shape(smoke)), generator=g)
        return x.to(device=device, dtype=dtype)


def _calibrate_batchnorm(model, x):
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the calibration passes
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(x + 0.1 * torch.randn_like(x))
    model.eval()


def _torchvision():
    try:
        import torchvision
    except ImportError as e:
        raise RuntimeError(f"torchvision is not installed ({e}); this model needs it") from e
    return torchvision


def _resnet50(smoke):
    return _torchvision().models.resnet50(weights=None)


def _mobilenet_v3_large(smoke):
    return _torchvision().models.mobilenet_v3_large(weights=None)


def _vit_b_16(smoke):
    # ViT's position embedding fixes the image size; the smoke run uses 32x32 (2x2 patches).
    model = _torchvision().models.vit_b_16(weights=None, image_size=32 if smoke else 224)
    # torchvision zero-initializes the classification head, which makes every output 0 and every
    # accuracy comparison meaningless: give it random weights like the rest of the network.
    torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    torch.nn.init.normal_(model.heads.head.bias, std=0.02)
    return model


def _image_shape(smoke):
    return (3, 64, 64) if smoke else (3, 224, 224)


def _seed_model(smoke):
    """The seed walkthrough's model (examples/seed_walkthrough/walkthrough.py): graft's custom layer
    between Linear layers."""
    import graft
    return torch.nn.Sequential(
        graft.nn.CustomLayer(param=0.5),
        torch.nn.Linear(16, 32),
        graft.nn.CustomLayer(param=1.0),
        torch.nn.Linear(32, 8),
    )


def _tiny_cnn(smoke):
    """A small conv net in plain torch (no torchvision): conv/BN/ReLU/pool/linear, so the CPU smoke
    run exercises the same kinds of layers as ResNet without needing torchvision."""
    c = 8 if smoke else 64

    def block(cin, cout, stride):
        return [torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU()]

    return torch.nn.Sequential(
        *block(3, c, 2), *block(c, c, 1), *block(c, 2 * c, 2), *block(2 * c, 2 * c, 1),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(2 * c, 10))


def _deformable_encoder(smoke):
    """The Deformable-DETR-style encoder of examples/deformable_detr_encoder (6 layers, d_model 256,
    8 heads, 4 levels, 4 points; graft's MultiScaleDeformableAttention) behind a one-input front:
    the input is the stride-8 feature map of an 800x1200 image (256 x 100 x 150) and the three
    coarser levels (50x75, 25x38, 13x19, the example's level shapes) are its every-other-pixel
    subsamplings, so the benchmark harness can feed one tensor."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "deformable_detr_encoder",
                        "encoder.py")
    spec = importlib.util.spec_from_file_location("graft_example_deformable_encoder", path)
    mod = importlib.util.module_from_spec(spec)
    # Registered like an imported module: torch.compile's tracer re-imports the modules it sees.
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    d = 32 if smoke else 256
    enc = mod.DeformableEncoder(num_layers=2 if smoke else 6, d_model=d, d_ffn=2 * d if smoke else 1024,
                                num_heads=4 if smoke else 8)
    mod.randomize_(enc, _SEED)

    class OneMapEncoder(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, x):
            levels = [x]
            for _ in range(3):
                levels.append(levels[-1][:, :, ::2, ::2])
            return self.encoder(*levels)

    return OneMapEncoder(enc)


MODELS = {
    "resnet50": ModelSpec("resnet50", "torchvision", _resnet50, _image_shape),
    "mobilenet_v3_large": ModelSpec("mobilenet_v3_large", "torchvision", _mobilenet_v3_large, _image_shape),
    "vit_b_16": ModelSpec("vit_b_16", "torchvision", _vit_b_16,
                          lambda smoke: (3, 32, 32) if smoke else (3, 224, 224)),
    "seed": ModelSpec("seed", "graft", _seed_model, lambda smoke: (16,),
                      note="seed walkthrough: CustomLayer(0.5), Linear(16,32), CustomLayer(1.0), Linear(32,8)"),
    "deformable_encoder": ModelSpec(
        "deformable_encoder", "graft", _deformable_encoder, lambda smoke: (32, 8, 12) if smoke else (256, 100, 150),
        note="Deformable-DETR encoder (6 layers, d256, 8 heads, 4 levels x 4 points) on an 800x1200 image's "
             "feature maps (S = 19947), graft's MultiScaleDeformableAttention"),
    "tiny_cnn": ModelSpec("tiny_cnn", "", _tiny_cnn, _image_shape,
                          note="plain-torch conv net (no torchvision), mainly for the CPU smoke run"),
}

DEFAULT_MODELS = ["resnet50", "mobilenet_v3_large", "vit_b_16", "seed"]
SMOKE_MODELS = ["seed", "tiny_cnn"]


def get(name):
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model '{name}' (known: {', '.join(MODELS)})") from None
