#include "lucid/graph/ir.h"

#include <sstream>

namespace lucid::graph {

int Graph::add_value(const TensorMeta& meta, ValueKind kind, int producer, int index) {
  values.push_back({meta, kind, producer, index});
  return int(values.size()) - 1;
}

std::vector<int> Graph::add_node(const PrimitivePtr& prim, const std::vector<int>& ins,
                                 const std::vector<TensorMeta>& output_metas) {
  Node n{prim, ins, {}};
  const int id = int(nodes.size());
  for (size_t k = 0; k < output_metas.size(); ++k)
    n.outputs.push_back(add_value(output_metas[k], ValueKind::Node, id, int(k)));
  nodes.push_back(std::move(n));
  return nodes.back().outputs;
}

std::string Graph::dump() const {
  std::ostringstream os;
  auto v = [&](int id) {
    const Value& val = values[id];
    const char* tag = val.kind == ValueKind::Input ? "in" : val.kind == ValueKind::Feed ? "feed"
                      : val.kind == ValueKind::Capture ? "cap" : "v";
    os << "%" << id << "(" << tag << ")";
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (k) os << ", ";
      v(n.outputs[k]);
    }
    os << " = " << n.prim->name() << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (k) os << ", ";
      v(n.inputs[k]);
    }
    os << ") : " << shape_str(values[n.outputs[0]].meta.shape) << " " << dtype_name(values[n.outputs[0]].meta.dtype)
       << "\n";
  }
  for (int o : outputs) {
    os << "output ";
    v(o);
    os << "\n";
  }
  for (const auto& w : writebacks) {
    os << "writeback cap" << w.capture << " <- ";
    v(w.value);
    os << "\n";
  }
  return os.str();
}

}  // namespace lucid::graph
