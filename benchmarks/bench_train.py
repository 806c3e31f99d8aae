"""Training step time, mnnpy against PyTorch CPU, at 1 and 2 threads: an MLP (784-512-256-10,
batch 64), the digits CNN (8x8 images, batch 64) and ResNet-18 (torchvision's architecture,
random initial weights, batch 8 at 112x112), all with SGD (momentum 0.9) on cross entropy in
training mode. mnnpy runs planned steps (``optimizer.compile``) with the same weights as the
PyTorch model; times are medians of interleaved runs after warm-up. Peak RSS (ru_maxrss) of
each side is measured in its own subprocess, which imports only that side's library.

    python benchmarks/bench_train.py [--models mlp,cnn,resnet18] [--threads 1,2] [--repeats 15]
"""
import argparse
import os
import resource
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

MODELS = {"mlp": (64, (784,), 10), "cnn": (64, (1, 8, 8), 10), "resnet18": (8, (3, 112, 112), 1000)}


# ------------------------------------------------------------------ mnnpy models
def mnnpy_model(name):
    import mnnpy.nn as nn
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    if name == "cnn":
        from train_digits import DigitsCNN
        return DigitsCNN()

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return self.relu(out + identity)

    class ResNet18(nn.Module):
        def __init__(self, num_classes=1000):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            widths = [64, 128, 256, 512]
            cin = 64
            for i, w in enumerate(widths):
                stride = 1 if i == 0 else 2
                setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
                cin = w
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).reshape([x.shape[0], 512]))

    return ResNet18()


def torch_model(name):
    import torch
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256),
                                   torch.nn.ReLU(), torch.nn.Linear(256, 10))
    if name == "cnn":
        class DigitsCNN(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.features = torch.nn.Sequential(
                    torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
                    torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
                    torch.nn.MaxPool2d(2), torch.nn.Flatten())
                self.classifier = torch.nn.Linear(32 * 4 * 4, 10)

            def forward(self, x):
                return self.classifier(self.features(x))
        return DigitsCNN()
    import torchvision
    return torchvision.models.resnet18(weights=None)


def copy_weights(theirs, ours):
    """Writes the PyTorch model's parameters and buffers into the mnnpy model (same names)."""
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    for name, p in list(ours.named_parameters()) + list(ours.named_buffers()):
        p.write(np.ascontiguousarray(state[name].astype(np.dtype(p.dtype))))


def batch(name, seed=0):
    n, shape, classes = MODELS[name]
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n,) + shape).astype(np.float32), rng.integers(0, classes, n)


def mnnpy_step(name, model=None):
    import mnnpy.nn.functional as nnf
    import mnnpy.optim as optim
    model = model or mnnpy_model(name)
    model.train()
    opt = optim.SGD(model, lr=0.01, momentum=0.9)
    x, y = batch(name)
    step = opt.compile(lambda xv, yv: nnf.cross_entropy(model(xv), yv), x, y)
    return lambda: step(x, y)


def torch_step(name, model=None):
    import torch
    model = model or torch_model(name)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = (torch.from_numpy(a) for a in batch(name))

    def run():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return run


# ------------------------------------------------------------------ peak memory, one side per process
def measure_rss(side, name, threads, steps=5):
    """(peak RSS after importing the library, peak RSS after the steps), MiB."""
    if side == "mnnpy":
        import mnnpy
        import mnnpy.nn  # noqa: F401
        mnnpy.set_num_threads(threads)
    else:
        import torch
        torch.set_num_threads(threads)
    imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB -> MiB
    run = mnnpy_step(name) if side == "mnnpy" else torch_step(name)
    for _ in range(steps):
        run()
    return imported, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def rss_in_subprocess(side, name, threads):
    out = subprocess.run([sys.executable, __file__, "--rss", side, "--models", name, "--threads", str(threads)],
                         capture_output=True, text=True, env=os.environ.copy())
    if out.returncode != 0:
        raise RuntimeError(f"the {side} memory run of {name} failed:\n{out.stderr[-2000:]}")
    return tuple(float(v) for v in out.stdout.strip().splitlines()[-1].split())


# ------------------------------------------------------------------ main
def main():
    parser = argparse.ArgumentParser(description="training step time and peak memory, mnnpy vs PyTorch")
    parser.add_argument("--models", default="mlp,cnn,resnet18")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-memory subprocesses")
    parser.add_argument("--rss", choices=["mnnpy", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = [m for m in args.models.split(",") if m]
    for m in names:
        if m not in MODELS:
            parser.error(f"unknown model {m!r}; choose from {sorted(MODELS)}")
    threads = [int(t) for t in args.threads.split(",") if t]
    if args.rss:
        print(*measure_rss(args.rss, names[0], threads[0]))
        return

    # Memory first: Linux keeps a parent's peak RSS in a child's ru_maxrss across fork and exec,
    # so the subprocesses start while this process is still small.
    rss = {}
    if not args.no_rss:
        for name in names:
            rss[name] = (rss_in_subprocess("mnnpy", name, threads[0]), rss_in_subprocess("torch", name, threads[0]))

    import torch

    import mnnpy
    from common import compare, machine_summary
    print(machine_summary())
    print(f"PyTorch {torch.__version__}; SGD(momentum=0.9) steps on cross entropy, training mode; "
          f"median of {args.repeats} interleaved runs after warm-up")
    print(f"{'model':<10}{'batch':>6}{'threads':>8}{'mnnpy ms':>11}{'torch ms':>11}{'ratio':>8}")
    import mnnpy.nn as nn
    for name in names:
        torch.manual_seed(0)
        theirs = torch_model(name)
        nn.manual_seed(0)
        ours = mnnpy_model(name)
        copy_weights(theirs, ours)
        run_ours, run_theirs = mnnpy_step(name, ours), torch_step(name, theirs)
        mnnpy.set_num_threads(threads[0])
        torch.set_num_threads(threads[0])
        first_ours, first_theirs = run_ours(), run_theirs()  # the same model: the same first loss
        print(f"{name}: first-step loss mnnpy {first_ours:.6f}, PyTorch {first_theirs:.6f} "
              f"(relative difference {abs(first_ours - first_theirs) / abs(first_theirs):.1e})", flush=True)
        for t in threads:
            mnnpy.set_num_threads(t)
            torch.set_num_threads(t)
            repeats = args.repeats if name != "resnet18" else max(5, args.repeats // 3)
            ours_s, theirs_s = compare(run_ours, run_theirs, repeats=repeats, warmup=2)
            print(f"{name:<10}{MODELS[name][0]:>6}{t:>8}{ours_s * 1e3:>11.2f}{theirs_s * 1e3:>11.2f}"
                  f"{ours_s / theirs_s:>8.2f}", flush=True)
    if rss:
        print("\npeak RSS (MiB, ru_maxrss of separate processes, 5 steps); 'training' = peak minus the peak "
              "after importing the library")
        print(f"{'model':<10}{'threads':>8}{'mnnpy':>10}{'torch':>10}{'ratio':>8}"
              f"{'mnnpy training':>16}{'torch training':>16}{'ratio':>8}")
        for name, ((ours_base, ours_mb), (theirs_base, theirs_mb)) in rss.items():
            ours_inc, theirs_inc = ours_mb - ours_base, theirs_mb - theirs_base
            print(f"{name:<10}{threads[0]:>8}{ours_mb:>10.1f}{theirs_mb:>10.1f}{ours_mb / theirs_mb:>8.2f}"
                  f"{ours_inc:>16.1f}{theirs_inc:>16.1f}{ours_inc / max(theirs_inc, 1e-9):>8.2f}", flush=True)
    print("ratio = mnnpy / PyTorch (below 1: mnnpy is faster or smaller)")


if __name__ == "__main__":
    main()
