// prepare_module: every CUSTOM node of a module made runnable (payload filled, shader compiled,
// payload and resource contract checked).
#include "weft/custom.h"

namespace weft::custom {

namespace {

std::vector<TensorType> types_of(const Graph& g, const std::vector<ValueId>& ids) {
  std::vector<TensorType> t;
  for (ValueId v : ids) t.push_back(g.value(v).type);
  return t;
}

}  // namespace

namespace {
std::string sizes_text(const std::array<uint32_t, 3>& s) {
  return "[" + std::to_string(s[0]) + "," + std::to_string(s[1]) + "," + std::to_string(s[2]) + "]";
}
}  // namespace

PrepareStats prepare_module(Module& m, const std::string& source) {
  PrepareStats stats;
  // Work on a copy of the changed attributes; commit only when every node passed.
  struct Change {
    size_t graph;
    int node;
    std::string payload;
  };
  std::vector<Change> changes;
  for (size_t gi = 0; gi < m.graphs().size(); ++gi) {
    const Graph& g = m.graphs()[gi];
    for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
      const Node& n = g.node(i);
      if (n.op != Op::CUSTOM) continue;
      const std::string& domain = n.attr_str("domain_name");
      const std::string& name = n.attr_str("operator_name");
      const Location where{.file = source, .graph = g.name(), .node = g.node_label(i), .operand = "implementation_attrs"};
      const std::vector<TensorType> ins = types_of(g, n.inputs), outs = types_of(g, n.outputs);
      const std::string& attrs = n.attr_str("implementation_attrs");
      // A CUSTOM node of another domain whose attributes are not a JSON object is not a shader
      // node: it stays in the graph as it is (a .tosa file keeps it; a CPU kernel may run it), as
      // Arm's model converter leaves CUSTOM nodes of domains other than com.arm.VulkanCustomShader.
      const size_t first = attrs.find_first_not_of(" \t\r\n");
      if (domain != "com.arm.VulkanCustomShader" && first != std::string::npos && attrs[first] != '{') continue;
      Payload p;
      bool changed = false;
      CompiledShader compiled;  // the payload's shader, when it came without weft_dispatch
      if (attrs.find_first_not_of(" \t\r\n") == std::string::npos) {
        std::optional<OpSpec> spec = find_op(domain, name);
        if (!spec) continue;  // maybe a CPU kernel runs it
        ExprEnv env;
        Lowered l = lower(*spec, ins, env, where);
        if (l.outputs != outs) {
          std::string want, have;
          for (const TensorType& t : l.outputs) want += (want.empty() ? "" : ", ") + t.str();
          for (const TensorType& t : outs) have += (have.empty() ? "" : ", ") + t.str();
          throw Error(ErrorCode::kVerify,
                      "custom operator " + domain + "::" + name + " declares outputs (" + have +
                          ") but its registration computes (" + want + ") for these inputs",
                      where);
        }
        p = std::move(l.payload);
        if (p.language == ShaderLanguage::kSpirv && !p.spirv.empty())
          compiled = compile_shader(p.language, "", p.spirv, p.entry_point, g.node_label(i));
        ++stats.lowered;
        changed = true;
      } else {
        p = parse_payload(attrs, where);
        if (p.language == ShaderLanguage::kGlsl || p.language == ShaderLanguage::kHlsl) {
          if (!p.shader_code) throw Error(ErrorCode::kVerify, "shader_language is " + std::string(language_name(p.language)) + " but there is no shader_code", where);
          compiled = compile_shader(p.language, *p.shader_code, {}, p.entry_point, g.node_label(i));
          p.language = ShaderLanguage::kSpirv;
          p.spirv = compiled.spirv;
          p.shader_code.reset();
          ++stats.compiled;
          changed = true;
        } else if (p.language == ShaderLanguage::kSpirv) {
          compiled = compile_shader(p.language, "", p.spirv, p.entry_point, g.node_label(i));
        } else {
          throw Error(ErrorCode::kVerify,
                      "the payload has no shader (shader_language is unspecified); give SPIR-V, GLSL or HLSL code", where);
        }
      }
      if (!p.dispatch && !p.spirv.empty()) {
        // No weft_dispatch: workgroup_sizes is what Arm's runtimes dispatch (the model converter
        // copies it into the segment's dispatch_shape; ExecuTorch documents it as "effectively
        // misnamed: it carries workgroup counts"), while the schema calls it the local size. The
        // shader's own local size tells which a payload means (docs/custom-ops.md, "Dispatch").
        p.dispatch = p.workgroup_sizes;
        const std::string ws = sizes_text(p.workgroup_sizes), ls = sizes_text(compiled.local_size);
        p.dispatch_rule = compiled.local_size == p.workgroup_sizes
                              ? "workgroup_sizes " + ws + " equals the shader's local size: read as the dispatch count " +
                                    "too, as Arm's runtimes do (give weft_dispatch if the dispatch differs)"
                              : "workgroup_sizes " + ws + " is not the shader's local size " + ls +
                                    ": it is the dispatch count (workgroups), as Arm's runtimes read it";
        changed = true;
      }
      if (!p.dispatch)
        throw Error(ErrorCode::kVerify,
                    "the payload has no dispatch shape (weft_dispatch): register the operator (weft compile "
                    "--custom-ops) so that Weft computes it from the registration's invocations",
                    where);
      check_contract(p, ins, outs, where);
      if (!compiled.spirv.empty()) check_shader_bindings(p, compiled, where);
      ++stats.checked;
      if (changed) changes.push_back({gi, i, write_payload(p)});
    }
  }
  for (Change& c : changes) {
    Node& n = m.graphs()[c.graph].mutable_node(c.node);
    n.attrs = make_attrs(Op::CUSTOM, {{"operator_name", n.attr_str("operator_name")},
                                      {"domain_name", n.attr_str("domain_name")},
                                      {"implementation_attrs", std::move(c.payload)}});
  }
  return stats;
}

}  // namespace weft::custom
