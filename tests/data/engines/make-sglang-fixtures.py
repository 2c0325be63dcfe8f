#!/usr/bin/python3
# Writes the SGLang fixtures of this folder the way SGLang writes them, with
# torch.save (Debian's python3-torch 1.13; run it with /usr/bin/python3).
# Run once by hand; tests read the outputs and need neither python nor torch.
#
# Mirrors sgl-project/sglang at commit 02295fe5ac5ccff3e8829800d50450351c56fb53,
# python/sglang/srt/eplb/expert_distribution.py:
#   _StatAccumulator.dump      -> stat-dump.pt: dict(rank, logical_count, average_utilization_rate_over_window)
#                                 logical_count from _convert_global_physical_count_to_logical_count
#                                 (int32 [buffer][num_layers][num_logical], dense layers all zero)
#   _DetailAccumulator.dump    -> detail-dump.pt: dict(records, last_physical_to_logical_map)
#   _dump_to_file              -> torch.save(data, path)
# and commit 01fec5c2e61f9568c41a6e1d4fd5ac46c88504f1,
# python/sglang/srt/eplb/expert_location.py:
#   ExpertLocationMetadata.init_trivial -> physical_to_logical_map = arange(P).repeat(L, 1) % E (int64)
#   compute_initial_expert_location_metadata reads "x.pt" with torch.load and "x.json" with json
#   -> map-eplb.pt / map-eplb.json: {"physical_to_logical_map": ...} as init_by_mapping takes it.
# The map rows are DeepSeek EPLB's global policy (deepseek-ai/EPLB eplb.py, vendored by SGLang as
# python/sglang/srt/eplb/eplb_algorithms/deepseek.py: replicate_experts, balanced_packing), which
# puts two replicas of expert 0 on one GPU in layer 1 for these loads.
import json
import random

import torch

NUM_LAYERS = 5        # num_hidden_layers; layer 0 is dense (first_k_dense_replace = 1)
DENSE = [0]
E = 16                # num_logical_experts
EP = 4                # ep_size
R = 4                 # ep_num_redundant_experts
P = E + R             # num_physical_experts
BUFFER = 3            # expert_distribution_recorder_buffer_size


def init_trivial():
    return torch.arange(0, P).repeat(NUM_LAYERS, 1) % E


def convert_global_physical_count_to_logical_count(global_physical_count, num_layers,
                                                    num_logical_experts, physical_to_logical_map):
    dim_extra, _, _ = global_physical_count.shape
    logical_count = torch.zeros((dim_extra, num_layers, num_logical_experts),
                                dtype=global_physical_count.dtype)
    logical_count.scatter_add_(dim=2,
                               index=physical_to_logical_map.unsqueeze(0).expand(dim_extra, -1, -1).to(torch.int64),
                               src=global_physical_count)
    return logical_count


def replicate_experts(weight, num_phy):
    # EPLB replicate_experts: each new replica to the expert with the highest load per replica
    n = len(weight)
    phy2log = list(range(n))
    logcnt = [1] * n
    for _ in range(n, num_phy):
        best = max(range(n), key=lambda i: (weight[i] / logcnt[i], -i))
        phy2log.append(best)
        logcnt[best] += 1
    return phy2log, logcnt


def balanced_packing(weights, num_packs):
    # EPLB balanced_packing: heaviest first onto the lightest pack with room
    per_pack = len(weights) // num_packs
    order = sorted(range(len(weights)), key=lambda i: (-weights[i], i))
    pack_weight = [0.0] * num_packs
    pack_items = [0] * num_packs
    pack_of = [0] * len(weights)
    rank_in = [0] * len(weights)
    for i in order:
        pack = min((p for p in range(num_packs) if pack_items[p] < per_pack),
                   key=lambda p: (pack_weight[p], p))
        pack_of[i] = pack
        rank_in[i] = pack_items[pack]
        pack_weight[pack] += weights[i]
        pack_items[pack] += 1
    return pack_of, rank_in


def eplb_global(load):
    phy2log, logcnt = replicate_experts(load, P)
    w = [load[e] / logcnt[e] for e in phy2log]
    pack_of, rank_in = balanced_packing(w, EP)
    slots = P // EP
    row = [0] * P
    for i, e in enumerate(phy2log):
        row[pack_of[i] * slots + rank_in[i]] = e
    return row


def main():
    rng = random.Random(14)
    # global_physical_count [buffer][layers][physical]: tokens each physical expert took per pass
    trivial = init_trivial()
    gpc = torch.zeros((BUFFER, NUM_LAYERS, P), dtype=torch.int32)
    for b in range(BUFFER):
        for layer in range(NUM_LAYERS):
            if layer in DENSE:
                continue
            for p in range(P):
                gpc[b, layer, p] = rng.randrange(0, 50) + (400 if p == 0 and layer == 1 else 0)
    logical_count = convert_global_physical_count_to_logical_count(gpc, NUM_LAYERS, E, trivial)
    torch.save(dict(rank=0, logical_count=logical_count,
                    average_utilization_rate_over_window=None), "stat-dump.pt")
    with open("stat-dump.expected.csv", "w") as f:
        f.write("# logical_count of stat-dump.pt summed over the buffer, by torch (the oracle)\n")
        f.write("# layers: " + ", ".join(str(i) for i in range(NUM_LAYERS)) + "\n")
        for row in logical_count.sum(dim=0).tolist():
            f.write(",".join(str(v) for v in row) + "\n")

    # EPLB's map for these loads; dense layers keep init_trivial's row
    summed = logical_count.sum(dim=0).tolist()
    phys = trivial.clone()
    for layer in range(NUM_LAYERS):
        if layer not in DENSE:
            phys[layer] = torch.tensor(eplb_global([float(v) for v in summed[layer]]))
    slots = P // EP
    dups = [(layer, g) for layer in range(NUM_LAYERS) for g in range(EP)
            if len(set(phys[layer, g * slots:(g + 1) * slots].tolist())) < slots]
    assert dups, "these loads must give EPLB a duplicate on one GPU"
    torch.save({"physical_to_logical_map": phys}, "map-eplb.pt")
    with open("map-eplb.json", "w") as f:
        json.dump({"physical_to_logical_map": phys.tolist()}, f)
        f.write("\n")
    # per-token dump: one record as _DetailSinglePassGatherer.collect + _DetailAccumulator.append
    record = dict(forward_pass_id=7, rank=0, gatherer_key="primary",
                  input_ids=[11, 12, 13], positions=[0, 1, 2], extend_seq_lens=[3],
                  forward_mode=1,
                  topk_ids_of_layer=torch.zeros((NUM_LAYERS, 3, 8), dtype=torch.int32),
                  misc_objects=[], global_physical_count=gpc[0].clone())
    torch.save(dict(records=[record], last_physical_to_logical_map=phys), "detail-dump.pt")
    # files moeplan must refuse, each for a stated reason
    torch.save({"logical_count": torch.zeros((2, 3), dtype=torch.float16)}, "bad-half.pt")
    torch.save({"logical_count": logical_count, "extra": {1, 2}}, "bad-set.pt")
    torch.save({"logical_count": -logical_count}, "bad-negative.pt")
    torch.save({"logical_count": logical_count[:, :, ::2]}, "bad-strided.pt")
    print("duplicates (layer, gpu):", dups)


def vllm_state():
    # vllm-project/vllm vllm/distributed/eplb/eplb_state.py, EplbState.build (read at 0014ec6c58e1):
    # build_initial_global_physical_to_logical_map, MAX_EXPERT_REDUNDANCY = 1023 (so
    # logical_to_physical_map is 1024 wide, vLLM PR #20775), the replica loop, then the
    # expansion to num_moe_layers. vLLM keeps these in memory only; torch.save of them is how a
    # user would dump them.
    num_moe_layers, num_logical, num_redundant, ep = 2, 4, 2, 3
    num_physical = num_logical + num_redundant
    p2l = list(range(num_logical)) + [i % num_logical for i in range(num_redundant)]
    p2l = torch.tensor(p2l)
    max_slots = 1023 + 1
    l2p = torch.full((num_logical, max_slots), -1)
    count = torch.zeros((num_logical,), dtype=torch.long)
    for i in range(num_physical):
        e = p2l[i]
        l2p[e, count[e]] = i
        count[e] += 1
    state = dict(
        physical_to_logical_map=p2l.unsqueeze(0).expand(num_moe_layers, -1).contiguous(),
        logical_to_physical_map=l2p.unsqueeze(0).expand(num_moe_layers, -1, -1).contiguous(),
        logical_replica_count=count.unsqueeze(0).expand(num_moe_layers, -1).contiguous(),
        expert_load_window=torch.zeros((4, num_moe_layers, num_physical // ep), dtype=torch.int32))
    torch.save(state, "vllm-state.pt")


if __name__ == "__main__":
    main()
    vllm_state()
