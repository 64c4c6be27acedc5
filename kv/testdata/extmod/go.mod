module example.com/kvqext

go 1.26

require kvq v0.0.0

replace kvq => ../../..
