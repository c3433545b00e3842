#version 450
// Softmax and layer-norm regions, one workgroup per row (the body: mx_rownorm.glsl).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "mx_rownorm.glsl"
