"""torchvision detectors with seeded random weights that detect something: shared by the
TorchScript import tests and benchmarks/bench_torch_import.py."""
import torch
import torchvision


class Detections(torch.nn.Module):
    """A torchvision detector's boxes, scores and labels for one image, as plain tensors."""

    def __init__(self, detector):
        super().__init__()
        self.detector = detector

    def forward(self, x):
        found = self.detector([x[0]])[0]
        return found["boxes"], found["scores"], found["labels"]


def detector(name, size):
    """A torchvision detector with seeded random weights that gives distinct detections: the
    BatchNorms hold batch statistics of random images (with their initial ones, the features
    vanish), and the classifier's last layers are scaled so that scores separate."""
    torch.manual_seed(0)
    model = torchvision.models.get_model(name, weights=None, weights_backbone=None).eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.momentum = 1.0
        model.backbone.train()
        model.backbone(model.transform(list(torch.rand(4, 3, size, size)))[0].tensors)
        model.backbone.eval()
        if hasattr(model, "head"):
            classifiers = [layers[-1] for layers in model.head.classification_head.module_list]
        else:
            classifiers = [model.roi_heads.box_predictor.cls_score]
        for layer in classifiers:
            layer.weight.mul_(40)
            layer.bias.mul_(40)
    return Detections(model).eval()
