# The server's end-to-end tests in Python (see tests/server/run_python.sh): the official openai
# client against `turbospark serve`, the load test and the web page in headless Chromium. A setup
# fixture synthesizes their models once per run.
set(ts_server_py ${CMAKE_CURRENT_SOURCE_DIR}/server/run_python.sh)
if(TURBOSPARK_SANITIZE)
  set(ts_sanitized 1)
else()
  set(ts_sanitized 0)
endif()
set(ts_server_env TS_BINARY=$<TARGET_FILE:turbospark> TS_TEST_DATA=${TS_TEST_DATA} TS_BUILD=${CMAKE_BINARY_DIR}
    TS_PYTHON=${TURBOSPARK_PYTHON} TS_SANITIZED=${ts_sanitized})
add_test(NAME server_python_setup COMMAND bash ${ts_server_py} setup)
set_tests_properties(server_python_setup PROPERTIES FIXTURES_SETUP server_python ENVIRONMENT "${ts_server_env}" TIMEOUT 900)
foreach(t test_openai test_harmony load_test test_browser)
  add_test(NAME server_${t} COMMAND bash ${ts_server_py} ${t})
  set_tests_properties(server_${t} PROPERTIES FIXTURES_REQUIRED server_python ENVIRONMENT "${ts_server_env}" TIMEOUT 1200)
endforeach()
# The load test keeps every core busy for a minute: alone, it neither slows timing-sensitive tests
# nor is slowed by them (its tok/s line is then meaningful).
set_tests_properties(server_load_test PROPERTIES RUN_SERIAL TRUE)
