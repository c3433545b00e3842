// Cross-checking an IOSpec against a module: variables, padding and sequences.
#include <algorithm>
#include <map>
#include <set>

#include "iospec/internal.h"

namespace weft::iospec {

void check_against(const IoSpec& spec, const Module& module, const std::string& source, const Target& target) {
  using namespace detail;
  const Graph& g = module.main();
  auto fail = [&](const std::string& operand, const std::string& message) {
    throw Error(ErrorCode::kVerify, message, Location{.file = source, .operand = operand});
  };

  // ---- Variables ----
  std::map<std::string, std::string> varname_of;  // key -> varname
  for (const bool input : {true, false}) {
    const std::vector<Variable>& vars = input ? spec.inputs : spec.outputs;
    const std::vector<ValueId>& ids = input ? g.inputs() : g.outputs();
    const std::string section = input ? "inputs" : "outputs";
    const std::string kind = input ? "input" : "output";
    std::vector<std::string> names;
    for (ValueId id : ids) names.push_back(g.value(id).name);
    std::map<std::string, std::string> seen;  // varname -> path
    for (const Variable& v : vars) {
      const std::string path = section + "." + v.key;
      if (v.input != input)
        fail(path + ".type", std::string("type: ") + (v.input ? "input" : "output") + ", but the entry is under " + section);
      if (varname_of.count(v.key))
        fail(path, "key '" + v.key + "' is used twice; keys are unique across inputs and outputs");
      varname_of[v.key] = v.varname;
      auto it = std::find(names.begin(), names.end(), v.varname);
      if (it == names.end())
        fail(path + ".varname",
             "varname: '" + v.varname + "', but the model has no " + kind + " '" + v.varname + "' (its " + section +
                 ": " + list_str(names) + ")");
      if (seen.count(v.varname))
        fail(path + ".varname",
             "varname: '" + v.varname + "' is also the varname of " + seen[v.varname] + "; each model " + kind +
                 " has one entry");
      seen[v.varname] = path;
      const TensorType& type = g.value(ids[static_cast<size_t>(it - names.begin())]).type;
      const std::string model = "the model's " + kind + " '" + v.varname + "' " + type.str();
      const int64_t n = type.num_elements();
      if (v.length != n)
        fail(path + ".length",
             "length: " + std::to_string(v.length) + ", but " + model + " has " + std::to_string(n) + " elements");
      const std::optional<int> prec = precision_of(type.dtype);
      if (!prec)
        fail(path + ".precision", "precision: " + std::to_string(v.precision) + ", but " + model +
                                      " has no IOSpec precision");
      if (v.precision != *prec)
        fail(path + ".precision", "precision: " + std::to_string(v.precision) + ", but " + model + " has " +
                                      std::to_string(*prec) + "-bit elements");
      Padding p;
      try {
        p = pad(n, *prec, target);
      } catch (const Error& e) {
        fail(path + ".padded_length", model + " cannot be padded by " + describe_target(target) + ": " + e.message());
      }
      const std::string elems = std::to_string(n) + " " + std::to_string(*prec) + "-bit elements";
      if (v.padded_length != p.padded_length)
        fail(path + ".padded_length", "padded_length: " + std::to_string(v.padded_length) + ", but " +
                                          describe_target(target) + " pads " + elems + " to " +
                                          std::to_string(p.padded_length));
      if (v.length_64b_words != p.length_64b_words)
        fail(path + ".length_64b_words", "length_64b_words: " + std::to_string(v.length_64b_words) + ", but " +
                                             describe_target(target) + " pads " + elems + " to " +
                                             std::to_string(p.length_64b_words) + " 64-bit words");
    }
    for (const std::string& name : names) {
      if (!seen.count(name)) {
        const TensorType& type = g.value(ids[static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin())]).type;
        fail(section, "the model's " + kind + " '" + name + "' " + type.str() + " has no entry (no " + kind +
                          " with varname '" + name + "')");
      }
    }
  }

  // ---- Sequences ----
  // Latched inputs: those of sequences without outputs, in sequence order; comments.latched agrees.
  std::vector<std::string> latched;
  std::set<std::string> in_latched_seq;
  for (const Sequence& s : spec.simple_sequences) {
    for (const std::string& key : s.outputs) {
      if (!spec.find_output(key))
        fail("simple_sequences." + s.name + ".outputs", "'" + key + "' is not an output's key");
    }
    for (const std::string& key : s.inputs) {
      if (!spec.find_input(key)) fail("simple_sequences." + s.name + ".inputs", "'" + key + "' is not an input's key");
      if (s.outputs.empty()) {
        latched.push_back(varname_of[key]);
        in_latched_seq.insert(key);
      }
    }
  }
  for (const Variable& v : spec.inputs) {
    if (v.latched != (in_latched_seq.count(v.key) > 0))
      fail("inputs." + v.key + ".comments.latched",
           v.latched ? "latched: true, but '" + v.key + "' is in no sequence without outputs"
                     : "latched: false, but '" + v.key + "' is in a sequence without outputs (a latched sequence)");
  }
  IoSpec derived;
  try {
    derived = generate(module, GenerateOptions{.target = target, .latched = latched});
  } catch (const Error& e) {
    fail("simple_sequences",
         "the model's sequences with latched inputs " + list_str(latched) + " cannot be derived: " + e.message());
  }
  auto varnames = [&](const std::vector<std::string>& keys) {
    std::vector<std::string> r;
    for (const std::string& k : keys) r.push_back(varname_of[k]);
    return r;
  };
  auto describe = [&](const std::vector<std::string>& keys) {
    std::vector<std::string> v = varnames(keys);
    return v == keys ? list_str(keys) : list_str(keys) + " (varnames " + list_str(v) + ")";
  };
  auto summary = [](const std::vector<Sequence>& seqs) {
    std::string r;
    for (const Sequence& s : seqs) r += (r.empty() ? "" : ", ") + s.name + " " + list_str(s.inputs) + " -> " + list_str(s.outputs);
    return r.empty() ? std::string("none") : r;
  };
  const std::vector<Sequence>& want = derived.simple_sequences;
  if (spec.simple_sequences.size() != want.size())
    fail("simple_sequences", std::to_string(spec.simple_sequences.size()) + " sequences, but the model with latched inputs " +
                                 list_str(latched) + " has " + std::to_string(want.size()) + ": " + summary(want));
  for (size_t i = 0; i < want.size(); ++i) {
    const Sequence& s = spec.simple_sequences[i];
    const Sequence& t = want[i];
    const std::string path = "simple_sequences." + s.name;
    if (s.outputs.empty() != t.outputs.empty())
      fail(path, "sequence " + std::to_string(i) + " '" + s.name + "' has " +
                     (s.outputs.empty() ? std::string("no outputs") : "outputs " + describe(s.outputs)) +
                     ", but the model's sequence " + std::to_string(i) + " is " + t.name + " " + list_str(t.inputs) +
                     " -> " + list_str(t.outputs) + " (the main sequence first, then one per latched input)");
    if (varnames(s.outputs) != t.outputs)
      fail(path + ".outputs", "outputs: " + describe(s.outputs) + ", but the model's " + t.name + " gives " +
                                  list_str(t.outputs) + " (outputs in the model's order)");
    if (varnames(s.inputs) != t.inputs)
      fail(path + ".inputs", "inputs: " + describe(s.inputs) + ", but the model's " + t.name + " needs " +
                                 list_str(t.inputs) + (t.outputs.empty() ? "" : " (inputs in the model's order)"));
  }
}

}  // namespace weft::iospec
