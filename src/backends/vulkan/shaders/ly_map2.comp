#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define TWO_SOURCES
#include "ly_map.glsl"
