// Einsum, lowered to TOSA's MATMUL, REDUCE_SUM, TRANSPOSE and RESHAPE.
//
// The equation is parsed into one letter per dimension ("..." becomes as many fresh letters as the
// operand has dimensions it covers). Each operand first loses its repeated letters (a diagonal: the
// operand times an identity mask, summed over the second copy) and the letters no other operand and
// not the output use (summed away). Operands are then contracted pairwise, left to right: letters
// both share and a later operand or the output needs are batch dimensions, letters both share and
// nothing later needs are contracted, the rest are kept on their side: one MATMUL of
// [batch, left, contracted] x [batch, contracted, right]. The result is transposed to the output's
// letter order.
#include <algorithm>
#include <map>
#include <set>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/lower.h"

namespace weft::onnxfe {

namespace {

struct Term {
  TVal v;
  std::string letters;  // one per dimension of v
};

std::string strip_spaces(const std::string& s) {
  std::string r;
  for (char c : s)
    if (c != ' ') r += c;
  return r;
}

// Sums v over the dimensions whose letters are in `drop`.
Term sum_away(Importer& imp, Term t, const std::set<char>& drop) {
  for (size_t k = t.letters.size(); k-- > 0;) {
    if (!drop.count(t.letters[k])) continue;
    TVal r = imp.reduce(Op::REDUCE_SUM, t.v, static_cast<int64_t>(k));
    Shape s = r.shape();
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(k));
    t.v = imp.reshape(r, s);
    t.letters.erase(k, 1);
  }
  return t;
}

Term permute(Importer& imp, const Term& t, const std::string& order) {
  std::vector<int64_t> perm;
  for (char c : order) perm.push_back(static_cast<int64_t>(t.letters.find(c)));
  return {imp.transpose(t.v, perm), order};
}

// Removes repeated letters of one operand (its diagonals).
Term diagonals(Importer& imp, Term t) {
  for (;;) {
    size_t p = std::string::npos, q = std::string::npos;
    for (size_t i = 0; i < t.letters.size() && p == std::string::npos; ++i)
      for (size_t j = i + 1; j < t.letters.size(); ++j)
        if (t.letters[i] == t.letters[j]) {
          p = i;
          q = j;
          break;
        }
    if (p == std::string::npos) return t;
    const Shape s = t.v.shape();
    if (s[p] != s[q]) imp.fail("the repeated index '" + std::string(1, t.letters[p]) + "' spans dimensions of sizes " +
                               std::to_string(s[p]) + " and " + std::to_string(s[q]), ErrorCode::kInvalidArgument);
    Shape ms(s.size(), 1);
    ms[p] = ms[q] = s[p];
    std::vector<double> eye(static_cast<size_t>(s[p] * s[p]), 0.0);
    for (int64_t i = 0; i < s[p]; ++i) eye[static_cast<size_t>(i * s[p] + i)] = 1.0;
    TVal mask = imp.const_tensor(Tensor::from_doubles({t.v.dtype(), ms}, eye));
    TVal m = imp.mul(t.v, mask);
    TVal r = imp.reduce(Op::REDUCE_SUM, m, static_cast<int64_t>(q));
    Shape rs = r.shape();
    rs.erase(rs.begin() + static_cast<std::ptrdiff_t>(q));
    t.v = imp.reshape(r, rs);
    t.letters.erase(q, 1);
  }
}

// Contracts a and b; `keep` are the letters later operands or the output need.
Term contract(Importer& imp, const Term& a, const Term& b, const std::set<char>& keep, std::map<char, int64_t>& size) {
  std::string batch, left, right, con;
  for (char c : a.letters) {
    const bool in_b = b.letters.find(c) != std::string::npos;
    if (in_b && keep.count(c)) batch += c;
    else if (in_b) con += c;
    else left += c;
  }
  for (char c : b.letters)
    if (a.letters.find(c) == std::string::npos) right += c;
  auto prod = [&](const std::string& ls) {
    int64_t p = 1;
    for (char c : ls) p *= size.at(c);
    return p;
  };
  // Broadcast dimensions of size 1 against the other operand's (ellipsis dimensions may).
  auto expand = [&](Term t) {
    std::vector<int64_t> mult(t.letters.size(), 1);
    bool any = false;
    for (size_t k = 0; k < t.letters.size(); ++k)
      if (t.v.shape()[k] != size.at(t.letters[k])) {
        mult[k] = size.at(t.letters[k]);
        any = true;
      }
    if (any) t.v = imp.emit(Op::TILE, {t.v, imp.shape_const(mult)});
    return t;
  };
  Term pa = expand(permute(imp, a, batch + left + con)), pb = expand(permute(imp, b, batch + con + right));
  const int64_t nb = prod(batch), nl = prod(left), nk = prod(con), nr = prod(right);
  TVal zp = imp.scalar(a.v.dtype(), 0, 1);
  TVal y = imp.emit(Op::MATMUL, {imp.reshape(pa.v, {nb, nl, nk}), imp.reshape(pb.v, {nb, nk, nr}), zp, zp});
  Shape os;
  for (char c : batch + left + right) os.push_back(size.at(c));
  return {imp.reshape(y, os), batch + left + right};
}

}  // namespace

void lower_Einsum(Importer& imp, const onnx::NodeProto&) {
  const std::string eq = strip_spaces(imp.attr_str("equation", ""));
  if (eq.empty()) imp.fail("the equation attribute is required", ErrorCode::kInvalidArgument);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> specs;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    specs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const int n = imp.num_inputs();
  if (static_cast<int>(specs.size()) != n)
    imp.fail("the equation '" + eq + "' has " + std::to_string(specs.size()) + " operands, the node " + std::to_string(n), ErrorCode::kInvalidArgument);
  // "..." becomes fresh letters (upper-case from 'Z' down, which equations may not use together with
  // ellipses in practice; a clash is reported).
  int64_t ell_rank = 0;
  for (int i = 0; i < n; ++i) {
    const std::string& sp = specs[static_cast<size_t>(i)];
    const size_t dots = sp.find("...");
    const int64_t named = static_cast<int64_t>(sp.size()) - (dots == std::string::npos ? 0 : 3);
    const int64_t rank = static_cast<int64_t>(imp.in(i).shape.size());
    if (dots == std::string::npos ? named != rank : named > rank)
      imp.fail("operand " + std::to_string(i) + " has rank " + std::to_string(rank) + " but '" + sp + "' names " + std::to_string(named) + " dimensions",
               ErrorCode::kInvalidArgument);
    if (dots != std::string::npos) ell_rank = std::max(ell_rank, rank - named);
  }
  std::string ell;
  for (int64_t k = 0; k < ell_rank; ++k) ell += static_cast<char>('Z' - (ell_rank - 1 - k));
  auto expand_dots = [&](const std::string& sp, int64_t rank) {
    const size_t dots = sp.find("...");
    if (dots == std::string::npos) return sp;
    const int64_t own = rank - (static_cast<int64_t>(sp.size()) - 3);
    return sp.substr(0, dots) + ell.substr(static_cast<size_t>(ell_rank - own)) + sp.substr(dots + 3);
  };
  std::vector<Term> terms;
  std::map<char, int64_t> size;
  std::map<char, int> count;
  for (int i = 0; i < n; ++i) {
    const OVal& o = imp.in(i);
    Term t{imp.plain(o), expand_dots(specs[static_cast<size_t>(i)], static_cast<int64_t>(o.shape.size()))};
    for (size_t k = 0; k < t.letters.size(); ++k) {
      const char c = t.letters[k];
      if (!std::isalpha(static_cast<unsigned char>(c)))
        imp.fail("'" + std::string(1, c) + "' in the equation is not a letter", ErrorCode::kInvalidArgument);
      if (ell.find(c) != std::string::npos && specs[static_cast<size_t>(i)].find(c) != std::string::npos)
        imp.fail("the equation uses '" + std::string(1, c) + "' together with '...'; Weft names ellipsis dimensions with it",
                 ErrorCode::kUnsupported);
      const int64_t d = o.shape[k];
      auto it = size.find(c);
      if (it == size.end() || it->second == 1) size[c] = d;
      else if (d != 1 && d != it->second)
        imp.fail("index '" + std::string(1, c) + "' has sizes " + std::to_string(it->second) + " and " + std::to_string(d), ErrorCode::kInvalidArgument);
    }
    std::set<char> distinct(t.letters.begin(), t.letters.end());
    for (char c : distinct) ++count[c];
    terms.push_back(t);
  }
  std::string out;
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    out = rhs.find("...") != std::string::npos ? rhs.substr(0, rhs.find("...")) + ell + rhs.substr(rhs.find("...") + 3) : rhs;
  } else {
    // Implicit output: the ellipsis, then the letters used exactly once, in alphabetical order.
    std::map<char, int> uses;
    for (const Term& t : terms)
      for (char c : t.letters) ++uses[c];
    out = ell;
    for (const auto& [c, k] : uses)
      if (k == 1 && ell.find(c) == std::string::npos) out += c;
  }
  for (char c : out)
    if (!size.count(c)) imp.fail("output index '" + std::string(1, c) + "' appears in no operand", ErrorCode::kInvalidArgument);
  if (std::set<char>(out.begin(), out.end()).size() != out.size()) imp.fail("an output index repeats", ErrorCode::kInvalidArgument);
  if (!is_float(terms[0].v.dtype()) && terms[0].v.dtype() != DType::kInt32)
    imp.fail(std::string("Einsum of ") + dtype_name(terms[0].v.dtype()) + " is not supported (float and int32 are)");

  // Each operand: diagonals, then letters used nowhere else summed away.
  for (size_t i = 0; i < terms.size(); ++i) {
    terms[i] = diagonals(imp, terms[i]);
    std::set<char> drop;
    for (char c : terms[i].letters)
      if (count[c] == 1 && out.find(c) == std::string::npos) drop.insert(c);
    terms[i] = sum_away(imp, terms[i], drop);
  }
  Term acc = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    std::set<char> keep(out.begin(), out.end());
    for (size_t j = i + 1; j < terms.size(); ++j) keep.insert(terms[j].letters.begin(), terms[j].letters.end());
    acc = contract(imp, acc, terms[i], keep, size);
  }
  std::set<char> rest;
  for (char c : acc.letters)
    if (out.find(c) == std::string::npos) rest.insert(c);
  acc = sum_away(imp, acc, rest);
  if (acc.letters.empty()) {
    imp.set_out(0, imp.reshape(acc.v, {}), {}, imp.in(0).onnx_type);
    return;
  }
  acc = permute(imp, acc, out);
  // Size-1 broadcast dimensions that stayed 1 on every side keep their broadcast size.
  Shape want;
  for (char c : out) want.push_back(size.at(c));
  if (acc.v.shape() != want) {
    std::vector<int64_t> mult;
    for (size_t k = 0; k < want.size(); ++k) mult.push_back(acc.v.shape()[k] == want[k] ? 1 : want[k]);
    acc.v = imp.emit(Op::TILE, {acc.v, imp.shape_const(mult)});
  }
  imp.set_out(0, acc.v, {}, imp.in(0).onnx_type);
}

}  // namespace weft::onnxfe
