#!/usr/bin/python3
"""Exports the CPU benchmark's models to ONNX and describes their inputs in
OUTDIR/models.json, the manifest both timing runners (testing/benchcpu and
scripts/ort_bench.js) fill their inputs from. Usage:

    export_bench_models.py OUTDIR

Every model has random weights (torch.manual_seed(0) before each one;
nothing is downloaded), is exported in eval mode with a dynamic batch
axis (axis 0 of every input and output) by torch.onnx.export, the
TorchScript exporter (Debian's torch 1.13 has no dynamo exporter), at
the opset its MODELS entry names: 13 to 17, so that the exports differ
as users' do (at 17, LayerNormalization is one operator; below,
ReduceMean, Sub, Pow, Sqrt and Div). So that every output is of order 1
and testing/benchcpu's max |Δ| column compares something, BatchNorm
running statistics are those of one training-mode pass over 8 uniform
random inputs (224² images, the autoencoder's 64²; torchvision's initial
mean 0 and variance 1 let MobileNetV2's outputs decay to 1e-9 and
EfficientNet-B0's to 1e-14), the ViT's classifier, which torchvision
initialises to zeros, is drawn from N(0, 0.02²), and MobileNetV3-Small's
classifier is initialised as nn.Linear does (torchvision's N(0, 0.01²)
leaves its outputs below 0.02). A model whose .onnx file exists is not
exported again (delete it to re-export); the manifest's entries of these
models are always rewritten, and those of other scripts kept
(bench_manifest.py; export_bench_tabular.py adds the tree ensembles).
digits.onnx, the MLP of examples/classify, is copied in as an extra row.

The models, in the manifest's (and the table's) order; those before
tenc_post at opset 13, but vit, bert and gpt at 14:
    mlp             784-512-256-10 MLP with ReLU, input float32[b, 784]
    chain64         64 elementwise nodes in a row (ReLU, then negation, in
                    turn) on float32[b, 16]: no arithmetic to speak of, so a
                    run's time is the runtime's overhead, per run and per
                    node
    digits          examples/classify's 64-32-10 MLP, input float32[b, 64]
    lstm            2-layer bidirectional LSTM (hidden 128) and a Linear
                    head on every step, input float32[b, 50, 64]
    resnet18, resnet50, mobilenet_v2, efficientnet_b0, convnext_tiny,
    squeezenet1_1   torchvision, input float32[b, 3, 224, 224]
    vit             torchvision VisionTransformer: 224², patch 16, 6 layers,
                    3 heads, hidden 192, MLP 768
    bert            post-LayerNorm encoder: 4 layers, hidden 256, 4 heads,
                    FFN 1024 with erf GELU; inputs input_ids and
                    attention_mask int64[b, 128]; output hidden[b, 128, 256]
    gpt             pre-LayerNorm decoder with a causal mask: 4 layers,
                    hidden 256, 4 heads, FFN 1024 with tanh GELU; input
                    input_ids int64[b, 128]; output logits[b, 128, 8192]
    tenc_post       torch.nn.TransformerEncoder (opset 17): post-norm,
                    batch-first, ReLU, 4 layers, hidden 256, 4 heads, FFN
                    1024, over token and position embeddings, with the
                    key-padding mask attention_mask == 0; inputs as bert's
    tenc_pre        the same (opset 16), but pre-norm with a final
                    LayerNorm, sequence-first (transposed in forward), erf
                    GELU and no mask; input input_ids
    mha             torch.nn.MultiheadAttention alone (opset 15): self-
                    attention, embed 256, 4 heads, on float32[b, 64, 256]
    hf_encoder      transformers' BertModel as that library writes it
                    (opset 14): q, k, v Linear, view and permute into
                    heads, mask (1 − mask)·float32 min, 4 layers as bert's;
                    outputs last_hidden_state and pooler_output[b, 256]
    causal_decoder  GPT-2-style (opset 14): 3 pre-norm layers, hidden
                    256, fused q, k, v projection, the causal mask built in
                    the graph (Trilu of ones, then Where with −inf), GELU
                    written out in tanh form, head tied to the embedding;
                    input and output as gpt's
    gru             2-layer unidirectional GRU (opset 13), hidden 128, and
                    a Linear head on the last step, input float32[b, 50, 64]
    lstm_uni        1-layer unidirectional LSTM (opset 15), hidden 256, and
                    a Linear head on the last step, input as gru's
    mlp_drop        784-512-256-10 MLP (opset 16) with Tanh, Dropout and
                    LogSoftmax, input float32[b, 784]
    regnet_y_400mf (grouped convolutions, squeeze-and-excitation; opset
    16), resnext50_32x4d (grouped; 13), shufflenet_v2_x1_0 (channel
    shuffle; 14), densenet121 (concatenations; 15), googlenet (branches,
    no auxiliary classifiers; 13), mobilenet_v3_small (hard-swish,
    squeeze-and-excitation; 17)
                    torchvision, input float32[b, 3, 224, 224]
    deeplabv3_mobilenet
                    torchvision's DeepLabV3 on MobileNetV3-Large (opset 16):
                    dilated convolutions, ASPP, bilinear Resize; input as
                    above, output the dict's "out", float32[b, 21, 224, 224]
    autoencoder     convolutional autoencoder (opset 17): three stride-2
                    Conv, three stride-2 ConvTranspose, input
                    float32[b, 3, 64, 64]

Manifest: {"models": [{"name", "file", "inputs": [{"name", "dtype",
"shape", "fill", "vocab"}]}]}: dtype is "float32" or "int64", shape has -1
for the batch axis, and fill names how element i of the batched tensor
(row-major) is set:
    sin    float32(sin(i)·0.5 + 0.5)
    ids    (i·7919 + 13) mod vocab
    mask   1, except 0 where i mod n ≥ n − n/4 (n: the last dimension):
           the last quarter of every sequence is padding
(testing/benchcpu/manifest.go states every rule, export_bench_tabular.py's
"uniform" too.)
Needs Debian's python3-torchvision (torch 1.13, torchvision 0.14)."""
import math
import os
import shutil
import sys
import time
import warnings

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from bench_manifest import merge_manifest

VOCAB = 8192
SEQ = 128
HIDDEN = 256
HEADS = 4
FFN = 1024
LAYERS = 4


class SelfAttention(nn.Module):
    """Multi-head self-attention written out as matmul, scale, mask add,
    softmax and matmul, so that the export is those ONNX operators."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x, mask):
        b, t, _ = x.shape
        heads = [p(x).view(b, t, HEADS, HIDDEN // HEADS).transpose(1, 2) for p in (self.q, self.k, self.v)]
        q, k, v = heads
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(HIDDEN // HEADS) + mask
        y = torch.matmul(F.softmax(scores, dim=-1), v)
        return self.out(y.transpose(1, 2).reshape(b, t, HIDDEN))


class Block(nn.Module):
    """One transformer layer: post-LayerNorm (BERT) or pre-LayerNorm (GPT)."""

    def __init__(self, pre_norm, gelu_approximate):
        super().__init__()
        self.pre_norm = pre_norm
        self.gelu_approximate = gelu_approximate
        self.attention = SelfAttention()
        self.norm1 = nn.LayerNorm(HIDDEN)
        self.up = nn.Linear(HIDDEN, FFN)
        self.down = nn.Linear(FFN, HIDDEN)
        self.norm2 = nn.LayerNorm(HIDDEN)

    def ffn(self, x):
        return self.down(F.gelu(self.up(x), approximate=self.gelu_approximate))

    def forward(self, x, mask):
        if self.pre_norm:
            x = x + self.attention(self.norm1(x), mask)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.attention(x, mask))
        return self.norm2(x + self.ffn(x))


class Encoder(nn.Module):
    """BERT-style: token and position embeddings, LayerNorm, post-norm
    layers; attention_mask (1: token, 0: padding) becomes an additive mask
    of −10000 on the padded keys."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Embedding(SEQ, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)
        self.layers = nn.ModuleList(Block(pre_norm=False, gelu_approximate="none") for _ in range(LAYERS))

    def forward(self, input_ids, attention_mask):
        t = input_ids.shape[1]
        x = self.norm(self.tokens(input_ids) + self.positions(torch.arange(t)))
        mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Decoder(nn.Module):
    """GPT-style: token and position embeddings, pre-norm layers under a
    causal mask (−inf above the diagonal, from a registered triu buffer
    sliced to the sequence length), a final LayerNorm and the vocabulary
    projection."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Embedding(SEQ, HIDDEN)
        self.layers = nn.ModuleList(Block(pre_norm=True, gelu_approximate="tanh") for _ in range(LAYERS))
        self.norm = nn.LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)
        self.register_buffer("causal", torch.triu(torch.full((SEQ, SEQ), float("-inf")), diagonal=1))

    def forward(self, input_ids):
        t = input_ids.shape[1]
        x = self.tokens(input_ids) + self.positions(torch.arange(t))
        mask = self.causal[:t, :t]
        for layer in self.layers:
            x = layer(x, mask)
        return self.head(self.norm(x))


class Recurrent(nn.Module):
    """2-layer bidirectional LSTM over [batch, 50, 64], hidden 128, and a
    10-way Linear head on every step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 128, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.lstm(x)[0])


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


class Chain(nn.Module):
    """64 elementwise nodes in a row: ReLU and negation in turn."""

    def forward(self, x):
        for i in range(64):
            x = torch.relu(x) if i % 2 == 0 else -x
        return x


def vit():
    model = torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=6, num_heads=3,
                                                 hidden_dim=192, mlp_dim=768)
    nn.init.normal_(model.heads.head.weight, std=0.02)
    return model


class TorchEncoder(nn.Module):
    """nn.TransformerEncoder over token and learned position embeddings:
    4 layers, hidden 256, 4 heads, FFN 1024. Post-norm, batch-first, ReLU
    and a key-padding mask (True on padding: attention_mask == 0) when
    masked; else pre-norm (norm_first, with a final LayerNorm),
    sequence-first (the batch is transposed in and out) and erf GELU."""

    def __init__(self, masked):
        super().__init__()
        self.masked = masked
        self.tokens = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Embedding(SEQ, HIDDEN)
        layer = nn.TransformerEncoderLayer(HIDDEN, HEADS, FFN, activation="relu" if masked else "gelu",
                                           batch_first=masked, norm_first=not masked)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, norm=None if masked else nn.LayerNorm(HIDDEN))

    def forward(self, input_ids, attention_mask=None):
        x = self.tokens(input_ids) + self.positions(torch.arange(input_ids.shape[1]))
        if self.masked:
            return self.encoder(x, src_key_padding_mask=attention_mask == 0)
        return self.encoder(x.transpose(0, 1)).transpose(0, 1)


class Attention(nn.Module):
    """nn.MultiheadAttention alone (embed 256, 4 heads, batch-first) as
    self-attention."""

    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(HIDDEN, HEADS, batch_first=True)

    def forward(self, x):
        return self.attention(x, x, x, need_weights=False)[0]


class HFSelfAttention(nn.Module):
    """transformers' BertSelfAttention and BertSelfOutput: q, k and v
    projections split into heads by view and permute, scores / √d plus the
    extended mask, softmax, dropout, the heads merged back, then dense,
    dropout and LayerNorm on the residual."""

    def __init__(self):
        super().__init__()
        self.num_attention_heads, self.attention_head_size = HEADS, HIDDEN // HEADS
        self.query, self.key, self.value = (nn.Linear(HIDDEN, HIDDEN) for _ in range(3))
        self.dropout = nn.Dropout(0.1)
        self.dense = nn.Linear(HIDDEN, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN, eps=1e-12)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size) + attention_mask
        attention_probs = self.dropout(nn.functional.softmax(attention_scores, dim=-1))
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (HIDDEN,))
        return self.LayerNorm(self.dropout(self.dense(context_layer)) + hidden_states)


class HFLayer(nn.Module):
    """transformers' BertLayer: attention, then the erf-GELU intermediate
    and the output dense, dropout and residual LayerNorm."""

    def __init__(self):
        super().__init__()
        self.attention = HFSelfAttention()
        self.intermediate = nn.Linear(HIDDEN, FFN)
        self.output = nn.Linear(FFN, HIDDEN)
        self.dropout = nn.Dropout(0.1)
        self.LayerNorm = nn.LayerNorm(HIDDEN, eps=1e-12)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        intermediate_output = nn.functional.gelu(self.intermediate(attention_output))
        return self.LayerNorm(self.dropout(self.output(intermediate_output)) + attention_output)


class HFEncoder(nn.Module):
    """transformers' BertModel, as it is written there: word, position and
    token-type embeddings (the ids of the last two sliced from registered
    buffers), the extended mask (1 − mask)·float32 min, 4 layers, and the
    pooler (dense and tanh on the first token) as a second output; weights
    from N(0, 0.02²) as its _init_weights draws them."""

    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.position_embeddings = nn.Embedding(SEQ, HIDDEN)
        self.token_type_embeddings = nn.Embedding(2, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(SEQ).expand((1, -1)))
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long))
        self.layer = nn.ModuleList(HFLayer() for _ in range(LAYERS))
        self.pooler = nn.Linear(HIDDEN, HIDDEN)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                m.weight.data.normal_(mean=0.0, std=0.02)
            if isinstance(m, nn.Linear):
                m.bias.data.zero_()

    def forward(self, input_ids, attention_mask):
        batch_size, seq_length = input_ids.size()
        token_type_ids = self.token_type_ids[:, :seq_length].expand(batch_size, seq_length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(self.position_ids[:, :seq_length])
        hidden_states = self.dropout(self.LayerNorm(embeddings))
        extended_attention_mask = attention_mask[:, None, None, :].to(dtype=torch.float32)
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(torch.float32).min
        for layer in self.layer:
            hidden_states = layer(hidden_states, extended_attention_mask)
        return hidden_states, torch.tanh(self.pooler(hidden_states[:, 0]))


class GPT2Block(nn.Module):
    """A GPT-2-style pre-norm layer: one fused q, k, v projection split in
    three, the causal mask built in the graph from the sequence length
    (triu of ones, then masked_fill with −inf), and the MLP with GELU
    written out in tanh form, as transformers' NewGELUActivation."""

    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(HIDDEN)
        self.c_attn = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.c_proj = nn.Linear(HIDDEN, HIDDEN)
        self.ln_2 = nn.LayerNorm(HIDDEN)
        self.c_fc = nn.Linear(HIDDEN, FFN)
        self.mlp_proj = nn.Linear(FFN, HIDDEN)

    def attention(self, x):
        b, t, _ = x.size()
        q, k, v = (h.view(b, t, HEADS, HIDDEN // HEADS).transpose(1, 2) for h in self.c_attn(x).split(HIDDEN, dim=2))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(HIDDEN // HEADS))
        causal = torch.triu(torch.ones(t, t), diagonal=1).bool()
        y = F.softmax(scores.masked_fill(causal, float("-inf")), dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, HIDDEN))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        h = self.c_fc(self.ln_2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.mlp_proj(h)


class CausalDecoder(nn.Module):
    """GPT-2-style decoder: 3 GPT2Blocks (hidden 256, 4 heads, FFN 1024),
    a final LayerNorm and a head tied to the token embedding; weights from
    N(0, 0.02²), as GPT-2's (the embedding's N(0, 1) would make the
    logits of order 100)."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.wpe = nn.Embedding(SEQ, HIDDEN)
        self.h = nn.ModuleList(GPT2Block() for _ in range(3))
        self.ln_f = nn.LayerNorm(HIDDEN)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, input_ids):
        x = self.wte(input_ids) + self.wpe(torch.arange(input_ids.shape[1]))
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


class LastStep(nn.Module):
    """A unidirectional batch-first GRU (2 layers, hidden 128) or LSTM (1
    layer, hidden 256) over [batch, 50, 64] and a 10-way Linear head on its
    last step."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn
        self.head = nn.Linear(rnn.hidden_size, 10)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


def mlp_drop():
    return nn.Sequential(nn.Linear(784, 512), nn.Tanh(), nn.Dropout(0.2), nn.Linear(512, 256), nn.Tanh(),
                         nn.Dropout(0.2), nn.Linear(256, 10), nn.LogSoftmax(dim=1))


class Segmentation(nn.Module):
    """torchvision's DeepLabV3 with a MobileNetV3-Large backbone (dilated
    convolutions, ASPP, bilinear upsampling), whose forward returns a dict:
    its "out", the 21-class map at the input's size."""

    def __init__(self):
        super().__init__()
        self.model = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, aux_loss=False)

    def forward(self, x):
        return self.model(x)["out"]


def conv(cin, cout):
    return [nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]


def deconv(cin, cout):
    return [nn.ConvTranspose2d(cin, cout, 3, stride=2, padding=1, output_padding=1), nn.BatchNorm2d(cout), nn.ReLU()]


class AutoEncoder(nn.Module):
    """Convolutional autoencoder on [batch, 3, 64, 64]: three stride-2
    convolutions down to 128×8×8 and three stride-2 ConvTranspose2d back
    up, with BatchNorm and ReLU, and a sigmoid."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(*conv(3, 32), *conv(32, 64), *conv(64, 128))
        self.decoder = nn.Sequential(*deconv(128, 64), *deconv(64, 32),
                                     nn.ConvTranspose2d(32, 3, 3, stride=2, padding=1, output_padding=1),
                                     nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


def mobilenet_v3_small():
    """torchvision's MobileNetV3-Small, its classifier's two Linear layers
    initialised as nn.Linear does (torchvision's N(0, 0.01²) makes the
    outputs of order 0.01)."""
    model = torchvision.models.mobilenet_v3_small(weights=None)
    for m in model.classifier:
        if isinstance(m, nn.Linear):
            m.reset_parameters()
    return model


def image(name="input"):
    return {"name": name, "dtype": "float32", "shape": [-1, 3, 224, 224], "fill": "sin"}


def ids():
    return {"name": "input_ids", "dtype": "int64", "shape": [-1, SEQ], "fill": "ids", "vocab": VOCAB}


def mask():
    return {"name": "attention_mask", "dtype": "int64", "shape": [-1, SEQ], "fill": "mask"}


def floats(*shape):
    return {"name": "input", "dtype": "float32", "shape": [-1, *shape], "fill": "sin"}


def torchvision_model(ctor):
    return lambda: ctor(weights=None)


# name → (constructor, inputs, output names, opset); None: copied, not exported.
MODELS = {
    "mlp": (mlp, [{"name": "input", "dtype": "float32", "shape": [-1, 784], "fill": "sin"}], ["output"], 13),
    "digits": (None, [{"name": "pixels", "dtype": "float32", "shape": [-1, 64], "fill": "sin"}], ["logits"], 13),
    "chain64": (Chain, [{"name": "input", "dtype": "float32", "shape": [-1, 16], "fill": "sin"}], ["output"], 13),
    "lstm": (Recurrent, [{"name": "input", "dtype": "float32", "shape": [-1, 50, 64], "fill": "sin"}], ["output"], 13),
    "resnet18": (torchvision_model(torchvision.models.resnet18), [image()], ["output"], 13),
    "resnet50": (torchvision_model(torchvision.models.resnet50), [image()], ["output"], 13),
    "mobilenet_v2": (torchvision_model(torchvision.models.mobilenet_v2), [image()], ["output"], 13),
    "efficientnet_b0": (torchvision_model(torchvision.models.efficientnet_b0), [image()], ["output"], 13),
    "convnext_tiny": (torchvision_model(torchvision.models.convnext_tiny), [image()], ["output"], 13),
    "squeezenet1_1": (torchvision_model(torchvision.models.squeezenet1_1), [image()], ["output"], 13),
    "vit": (vit, [image()], ["output"], 14),
    "bert": (Encoder, [ids(), mask()], ["hidden"], 14),
    "gpt": (Decoder, [ids()], ["logits"], 14),
    "tenc_post": (lambda: TorchEncoder(masked=True), [ids(), mask()], ["hidden"], 17),
    "tenc_pre": (lambda: TorchEncoder(masked=False), [ids()], ["hidden"], 16),
    "mha": (Attention, [floats(64, HIDDEN)], ["output"], 15),
    "hf_encoder": (HFEncoder, [ids(), mask()], ["last_hidden_state", "pooler_output"], 14),
    "causal_decoder": (CausalDecoder, [ids()], ["logits"], 14),
    "gru": (lambda: LastStep(nn.GRU(64, 128, num_layers=2, batch_first=True)), [floats(50, 64)], ["output"], 13),
    "lstm_uni": (lambda: LastStep(nn.LSTM(64, 256, batch_first=True)), [floats(50, 64)], ["output"], 15),
    "mlp_drop": (mlp_drop, [floats(784)], ["output"], 16),
    "regnet_y_400mf": (torchvision_model(torchvision.models.regnet_y_400mf), [image()], ["output"], 16),
    "resnext50_32x4d": (torchvision_model(torchvision.models.resnext50_32x4d), [image()], ["output"], 13),
    "shufflenet_v2_x1_0": (torchvision_model(torchvision.models.shufflenet_v2_x1_0), [image()], ["output"], 14),
    "densenet121": (torchvision_model(torchvision.models.densenet121), [image()], ["output"], 15),
    "googlenet": (lambda: torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True), [image()],
                  ["output"], 13),
    "mobilenet_v3_small": (mobilenet_v3_small, [image()], ["output"], 17),
    "deeplabv3_mobilenet": (Segmentation, [image()], ["output"], 16),
    "autoencoder": (AutoEncoder, [floats(3, 64, 64)], ["output"], 17),
}


def example(spec, batch=2):
    """A tensor shaped like the input spec at the given batch size (the
    exporter traces with it; its values do not matter beyond being valid)."""
    shape = [batch if d == -1 else d for d in spec["shape"]]
    if spec["dtype"] == "int64":
        return torch.ones(shape, dtype=torch.int64)
    return torch.zeros(shape)


def calibrate(model, inputs):
    """Sets the BatchNorm running statistics of model to those of one
    training-mode pass over 8 uniform random inputs of the inputs' shapes
    (images, for all models but the autoencoder, of 224²)."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # the cumulative average: this pass's statistics
    model.train()
    with torch.no_grad():
        model(*(torch.rand([8 if d == -1 else d for d in i["shape"]]) for i in inputs))


def export(name, ctor, inputs, outputs, opset, path):
    torch.manual_seed(0)
    model = ctor()
    calibrate(model, inputs)
    model.eval()
    names = [i["name"] for i in inputs] + outputs
    # Not under torch.no_grad(), as torch.onnx.export's documentation has
    # it: without gradients, nn.MultiheadAttention and
    # nn.TransformerEncoder(Layer) in eval mode take their fused fast paths
    # (aten::_native_multi_head_attention, a nested tensor for the padding
    # mask), which the exporter cannot export.
    torch.onnx.export(model, tuple(example(i) for i in inputs), path,
                      input_names=[i["name"] for i in inputs], output_names=outputs,
                      dynamic_axes={n: {0: "batch"} for n in names}, opset_version=opset)


def main():
    # The exporter warns that the LSTM's initial states might be fixed to
    # the traced batch size (they are built from the input's shape: checked
    # by running at batch 1 and 8), and that ViT's image-size assertion is
    # traced as a constant (the size is fixed at 224).
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    manifest = []
    start, exported = time.time(), 0
    for name, (ctor, inputs, outputs, opset) in MODELS.items():
        path = os.path.join(out, name + ".onnx")
        if not os.path.exists(path):
            if ctor is None:
                shutil.copyfile(os.path.join(repo, "examples", "classify", name + ".onnx"), path)
            else:
                export(name, ctor, inputs, outputs, opset, path)
            exported += 1
        manifest.append({"name": name, "file": name + ".onnx", "inputs": inputs})
    merge_manifest(out, manifest)
    print(f"export_bench_models.py: {exported} of {len(MODELS)} models exported in {time.time() - start:.0f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
