"""Exports kora's model zoo to ONNX: thirteen real architectures with random weights, built
from their libraries' own definitions (no download), opset 17, batch 1, static shapes.

  resnet50        torchvision ResNet-50, 224x224
  mobilenet_v2    torchvision MobileNetV2, 224x224
  vit_b_16        torchvision ViT-B/16, 224x224
  bert_base       transformers BERT-base (from BertConfig()), sequence 128
  segformer_b0    transformers Segformer-B0 (from SegformerConfig()), 512x512
  efficientvit_b0 timm EfficientViT-B0 (MIT), 224x224
  yolov8n         ultralytics YOLOv8n, built from its yaml, 640x640
  candy           fast-neural-style transformer network (Candy), 224x224
  resnet18_int8   torchvision ResNet-18 quantized to int8 in QDQ form by onnxruntime's
                  quantize_static (uint8 activations, int8 weights per channel, calibrated
                  on random images), 224x224
  llama_tiny      transformers Llama (decoder-only, causal mask, rotary embeddings, grouped
                  query attention; a 4-layer, 256-wide LlamaConfig), sequence 128
  swinv2_tiny     timm Swin-V2-T (shifted-window attention, window 8), 256x256
  raft_small      torchvision RAFT-small optical flow (correlation look-ups by GridSample,
                  4 flow updates), two 128x128 images
  bilstm_text     text classifier: embedding, 2-layer bidirectional LSTM, mean over time,
                  linear head (torch.nn.LSTM), sequence 64. Fission unrolls the LSTMs (4k
                  primitives); the segment ending each layer is proven only once cut in
                  halves (PartitionOptions::split_after_seconds)

Beside the zoo (not in the default list; name it to export it):
  gru_text        the same text classifier with a 2-layer unidirectional GRU (torch.nn.GRU)

Beyond the zoo, any torchvision or timm image model by name: torchvision:densenet121,
timm:convnext_nano, ... (224x224, or a timm model's own size where it takes no other; written
as torchvision_densenet121.onnx); any transformers
model by the name of its configuration class, without "Config": transformers:GPT2,
transformers:DistilBert, transformers:ConvNext, ... (its default configuration; text models
take input_ids and attention_mask of sequence 128, vision models pixel_values at their
configuration's image size; the output is last_hidden_state); with int8: before
it (int8:torchvision:mobilenet_v2), quantized to QDQ int8 as resnet18_int8 is. kora is judged on
models it has never seen: the benchmarks check changes on such models too.

Weights are random (seeded); parameters and buffers that come out all zeros (biases,
BatchNorm running means) are re-randomised, and BatchNorm statistics drawn so that
activations stay in a sensible range, so output comparisons mean something.

usage: python models/export.py OUTPUT_DIR [NAME ...]
"""
import os
import sys
import time

import torch

OPSET = 17
SEED = 0


class Candy(torch.nn.Module):
    """The fast-neural-style transformer network (Johnson et al.), as in the Candy model:
    reflection padding, 9x9 and 3x3 convolutions, instance norm, five residual blocks,
    nearest-neighbour upsampling."""

    class ConvLayer(torch.nn.Sequential):
        def __init__(self, cin, cout, kernel, stride=1, upsample=False):
            layers = [torch.nn.Upsample(scale_factor=2, mode="nearest")] if upsample else []
            layers += [torch.nn.ReflectionPad2d(kernel // 2),
                       torch.nn.Conv2d(cin, cout, kernel, stride)]
            super().__init__(*layers)

    class Residual(torch.nn.Module):
        def __init__(self, c):
            super().__init__()
            conv, norm = Candy.ConvLayer, torch.nn.InstanceNorm2d
            self.body = torch.nn.Sequential(conv(c, c, 3), norm(c, affine=True), torch.nn.ReLU(),
                                            conv(c, c, 3), norm(c, affine=True))

        def forward(self, x):
            return x + self.body(x)

    def __init__(self):
        super().__init__()
        conv, norm, relu = Candy.ConvLayer, torch.nn.InstanceNorm2d, torch.nn.ReLU
        self.net = torch.nn.Sequential(
            conv(3, 32, 9), norm(32, affine=True), relu(),
            conv(32, 64, 3, 2), norm(64, affine=True), relu(),
            conv(64, 128, 3, 2), norm(128, affine=True), relu(),
            *[Candy.Residual(128) for _ in range(5)],
            conv(128, 64, 3, upsample=True), norm(64, affine=True), relu(),
            conv(64, 32, 3, upsample=True), norm(32, affine=True), relu(),
            conv(32, 3, 9))

    def forward(self, x):
        return self.net(x)


class BiLstmText(torch.nn.Module):
    """A text classifier: token embedding, a 2-layer recurrent network (a bidirectional
    LSTM, or another torch.nn cell), the mean of its outputs over time, a linear head."""

    def __init__(self, vocab=1000, dim=128, hidden=128, classes=4, cell=torch.nn.LSTM,
                 bidirectional=True):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.lstm = cell(dim, hidden, num_layers=2, bidirectional=bidirectional, batch_first=True)
        self.head = torch.nn.Linear((2 if bidirectional else 1) * hidden, classes)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out.mean(dim=1))


class FirstOutput(torch.nn.Module):
    """Keeps one tensor of a model whose forward returns a tuple or a ModelOutput."""

    def __init__(self, model, pick):
        super().__init__()
        self.model, self.pick = model, pick

    def forward(self, *args):
        return self.pick(self.model(*args))


def image(size):
    return (torch.randn(1, 3, size, size),)


def build(name):
    """Returns (module, example inputs, input names, output names)."""
    if name in ("resnet50", "mobilenet_v2", "vit_b_16"):
        import torchvision
        return getattr(torchvision.models, name)(weights=None), image(224), ["image"], ["logits"]
    if name == "bert_base":
        import transformers
        bert = transformers.BertModel(transformers.BertConfig())
        model = FirstOutput(lambda ids, mask: bert(input_ids=ids, attention_mask=mask),
                            lambda out: out.last_hidden_state)
        model.bert = bert  # registers the parameters
        ids = torch.randint(0, 1000, (1, 128))
        return model, (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"], ["hidden"]
    if name == "segformer_b0":
        import transformers
        seg = transformers.SegformerForSemanticSegmentation(transformers.SegformerConfig())
        model = FirstOutput(lambda x: seg(pixel_values=x), lambda out: out.logits)
        model.seg = seg
        return model, image(512), ["pixel_values"], ["logits"]
    if name == "efficientvit_b0":
        import timm
        return timm.create_model("efficientvit_b0", pretrained=False), image(224), ["image"], ["logits"]
    if name == "yolov8n":
        from ultralytics.nn.tasks import DetectionModel
        det = DetectionModel("yolov8n.yaml", verbose=False)
        model = FirstOutput(det, lambda out: out[0] if isinstance(out, (tuple, list)) else out)
        return model, image(640), ["images"], ["detections"]
    if name == "candy":
        return Candy(), image(224), ["image"], ["stylized"]
    if name == "llama_tiny":
        import transformers
        config = transformers.LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=688,
                                          num_hidden_layers=4, num_attention_heads=8,
                                          num_key_value_heads=4, max_position_embeddings=256)
        llama = transformers.LlamaModel(config)
        # An explicit attention mask: without one, transformers looks for packed sequences
        # with torch.diff, which the ONNX exporter cannot write.
        model = FirstOutput(lambda ids, mask: llama(input_ids=ids, attention_mask=mask,
                                                    use_cache=False),
                            lambda out: out.last_hidden_state)
        model.llama = llama
        ids = torch.randint(0, 1000, (1, 128))
        return model, (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"], ["hidden"]
    if name == "raft_small":
        import torchvision
        raft = torchvision.models.optical_flow.raft_small(weights=None)
        model = FirstOutput(lambda a, b: raft(a, b, num_flow_updates=4), lambda flows: flows[-1])
        model.raft = raft
        return model, image(128) + image(128), ["image1", "image2"], ["flow"]
    if name == "swinv2_tiny":
        import timm
        return (timm.create_model("swinv2_tiny_window8_256", pretrained=False), image(256),
                ["image"], ["logits"])
    if name == "bilstm_text":
        return BiLstmText(), (torch.randint(0, 1000, (1, 64)),), ["input_ids"], ["logits"]
    if name == "gru_text":
        return (BiLstmText(cell=torch.nn.GRU, bidirectional=False), (torch.randint(0, 1000, (1, 64)),),
                ["input_ids"], ["logits"])
    if name.startswith("torchvision:"):
        import torchvision
        return (torchvision.models.get_model(name.split(":", 1)[1], weights=None), image(224),
                ["image"], ["logits"])
    if name.startswith("timm:"):
        import timm
        net = timm.create_model(name.split(":", 1)[1], pretrained=False)
        # 224x224, or the model's own size where it takes no other (windowed attention)
        cfg = getattr(net, "pretrained_cfg", None) or {}
        size = cfg["input_size"][-1] if cfg.get("fixed_input_size") else 224
        return net, image(size), ["image"], ["logits"]
    if name.startswith("transformers:"):
        return transformers_model(name.split(":", 1)[1])
    raise SystemExit(f"unknown model '{name}'")


def transformers_model(kind):
    """transformers' base model of configuration class KIND + "Config", default configuration."""
    import inspect

    import transformers
    config_class = getattr(transformers, kind + "Config", None)
    if config_class is None:
        raise SystemExit(f"transformers has no configuration class '{kind}Config'")
    net = transformers.AutoModel.from_config(config_class())
    params = inspect.signature(net.forward).parameters
    if "pixel_values" in params:
        size = getattr(net.config, "image_size", 224)
        size = size if isinstance(size, int) else size[0]
        model = FirstOutput(lambda x: net(pixel_values=x), lambda out: out.last_hidden_state)
        model.net = net
        return model, image(size), ["pixel_values"], ["hidden"]
    ids = torch.randint(0, 1000, (1, 128))
    kwargs = {"use_cache": False} if "use_cache" in params else {}
    model = FirstOutput(lambda ids, mask: net(input_ids=ids, attention_mask=mask, **kwargs),
                        lambda out: out.last_hidden_state)
    model.net = net
    return model, (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"], ["hidden"]


MODELS = ["resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "segformer_b0",
          "efficientvit_b0", "yolov8n", "candy", "resnet18_int8", "llama_tiny", "swinv2_tiny",
          "raft_small", "bilstm_text"]
# Quantized models: the float model they are quantized from.
QUANTIZED = {"resnet18_int8": "torchvision:resnet18"}


def rerandomise(model, gen):
    """All-zero floating parameters and buffers get small random values; BatchNorm running
    statistics are drawn around (0, 1) so that the network stays well conditioned."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point() and t.numel() > 0 and not t.any():
                t.copy_(torch.randn(t.shape, generator=gen) * 0.02)


def seeded(name):
    """(module in eval mode, example inputs, input names, output names), with the zoo's
    weights: the same on every call, so the ONNX file and the module compute the same."""
    torch.manual_seed(SEED)
    model, args, input_names, output_names = build(name)
    model.eval()
    rerandomise(model, torch.Generator().manual_seed(SEED + 1))
    return model, args, input_names, output_names


def original_model(name):
    """The PyTorch module models/zoo/NAME.onnx was exported from (benchmarks run it); for a
    quantized model, the float module it was quantized from."""
    return seeded(QUANTIZED.get(name, name))[0]


def export_quantized(name, out_dir):
    """The float model exported as below, then quantized to QDQ int8 (QuantizeLinear and
    DequantizeLinear around float operators) by onnxruntime.quantization.quantize_static,
    calibrated on 8 random images (seeded)."""
    import tempfile

    import numpy as np
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    base = QUANTIZED.get(name) or name[len("int8:"):]
    path = os.path.join(out_dir, name.replace(":", "_") + ".onnx")
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        export(base, tmp)
        _, args, input_names, _ = seeded(base)
        rng = np.random.default_rng(SEED)
        batches = iter([{input_names[0]: rng.standard_normal(tuple(args[0].shape)).astype(np.float32)}
                        for _ in range(8)])

        class Images(CalibrationDataReader):
            def get_next(self):
                return next(batches, None)

        quantize_static(os.path.join(tmp, base.replace(":", "_") + ".onnx"), path, Images(),
                        quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, per_channel=True)
    print(f"  {name:16s} quantized (QDQ int8) -> {path} ({time.time() - start:.1f} s)",
          flush=True)


def export(name, out_dir):
    if name in QUANTIZED or name.startswith("int8:"):
        return export_quantized(name, out_dir)
    model, args, input_names, output_names = seeded(name)
    path = os.path.join(out_dir, name.replace(":", "_") + ".onnx")
    start = time.time()
    with torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=OPSET, input_names=input_names,
                          output_names=output_names, dynamo=False)
    params = sum(p.numel() for p in model.parameters())
    print(f"  {name:16s} {params / 1e6:6.2f} M parameters  -> {path} "
          f"({time.time() - start:.1f} s)", flush=True)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out_dir, names = sys.argv[1], sys.argv[2:] or MODELS
    os.makedirs(out_dir, exist_ok=True)
    torch.set_grad_enabled(False)
    # nn.MultiheadAttention's inference fast path is one fused op ONNX cannot express.
    torch.backends.mha.set_fastpath_enabled(False)
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] exporting {name}", flush=True)
        export(name, out_dir)


if __name__ == "__main__":
    main()
