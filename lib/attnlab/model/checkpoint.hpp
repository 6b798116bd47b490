// Checkpoints of the ViT (vit_spec.md) and of the recall model (recall_spec.md): a directory with manifest.json
// and one float32 .npy per parameter or buffer (C order, loadable by numpy.load), named after the tensor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "attnlab/model/checkpoint_manifest.hpp"
#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// Writes the model's parameters and buffers and manifest.json into `dir` (created if needed; each file
// atomically, the manifest last). `step` is the number of optimiser steps taken.
template <typename T>
void save_checkpoint(ViT<T>& model, const std::filesystem::path& dir, std::int64_t step);

// Reads manifest.json of `dir`: CheckpointError if it is missing, not a regular file (refused without
// blocking: a FIFO at once), larger than kMaxManifestBytes, malformed or of another format
// (parse_checkpoint_manifest), or if the model it describes cannot fit in the memory this process may
// still use (vit_memory_problem), all before the model is built.
CheckpointInfo read_checkpoint_info(const std::filesystem::path& dir);

// Loads `dir` into `model`: the manifest's method and widths must equal the model's and every tensor
// of the model must be present with its shape and kind (and no other), each file a float32 .npy of that
// shape, else CheckpointError naming the first mismatch. The model is left unchanged on error. float32
// values load exactly into float.
template <typename T>
void load_checkpoint(ViT<T>& model, const std::filesystem::path& dir);

// The same for the recall model (format "attnlab-recall-checkpoint"): its manifest names the task's sizes and
// the model's widths; the loader compares them with the model's and reads every tensor as load_checkpoint(ViT)
// does, and refuses the same way (a ViT checkpoint included: another format).
template <typename T>
void save_checkpoint(RecallModel<T>& model, const std::filesystem::path& dir, std::int64_t step);
RecallCheckpointInfo read_recall_checkpoint_info(const std::filesystem::path& dir);
template <typename T>
void load_checkpoint(RecallModel<T>& model, const std::filesystem::path& dir);

// The "format" manifest.json of `dir` names (kCheckpointFormat, kRecallCheckpointFormat, or "" for a manifest that
// names none): which model a checkpoint directory holds. CheckpointError when the manifest cannot be read.
std::string read_checkpoint_format(const std::filesystem::path& dir);

}  // namespace attnlab
