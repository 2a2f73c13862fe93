package io.tamis.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** JSON between the two halves (Jackson, which Spark ships). */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}

    static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new TamisException("internal error: writing JSON: " + e.getMessage());
        }
    }

    static JsonNode read(String text) {
        try {
            return MAPPER.readTree(text);
        } catch (JsonProcessingException e) {
            throw new TamisException("internal error: reading tamis's JSON: " + e.getMessage());
        }
    }
}
