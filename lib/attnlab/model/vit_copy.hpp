// A copy of a ViT (or a recall model), in the same or another scalar type: a new model of the same configuration
// whose learned tensors and method buffers hold the source's values (cast). The models are not copyable (they own
// their attention methods); training arms that continue from one state each start from a copy, and the analyses
// that run in double start from a copy of the float model.
#pragma once

#include <memory>

#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// The source's configuration with the library's methods (make_trainable_attention), every parameter and
// buffer copied in manifest order. Throws std::invalid_argument when the method is not a library method.
template <typename To, typename From>
std::unique_ptr<ViT<To>> copy_vit(ViT<From>& source);
template <typename To, typename From>
std::unique_ptr<RecallModel<To>> copy_recall_model(RecallModel<From>& source);

}  // namespace attnlab
