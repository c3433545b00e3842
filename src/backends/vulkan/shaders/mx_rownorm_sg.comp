#version 450
// Softmax and layer-norm regions, several rows per workgroup, one subgroup each (the body:
// mx_rownorm.glsl). Needs subgroup arithmetic and vote operations in compute shaders.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#include "common.glsl"
#define SUBGROUP_ROWS
#include "mx_rownorm.glsl"
