#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "ly_map.glsl"
